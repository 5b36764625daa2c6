"""The status poll's cost on both ends, over the real sshd with the command helper: one
host-script run that reads the launch record and probes its process (what `status` does now)
vs the record read and the probe as two runs (what it did before), against a running simulated
server's real launch record. The host side is the helper and its forks (CPU from /proc, waited-
for children included); the console side is this process.

    .venv/bin/python tests/bench/bench_status_poll.py [N]
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from console.server.lifecycle import ServerLifecycle
from tests.support.host_fixtures import make_ssh_transport
from tests.support.sim_fleet import fleet_config, start_servers, stop_servers
from tests.support.sshd import start_sshd

TICK = os.sysconf("SC_CLK_TCK")


def helper_cpu_s() -> float:
    """CPU of every plateau-hostd process (itself and the forks it has reaped)."""
    total = 0.0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if b"plateau-hostd" not in Path(f"/proc/{pid}/cmdline").read_bytes():
                continue
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(v) for v in fields[11:15]) / TICK
    return total


async def measure(label: str, poll: Callable[[], Awaitable[object]], n: int) -> None:
    await poll()
    host0, console0, wall0 = helper_cpu_s(), time.process_time(), time.monotonic()
    for _ in range(n):
        await poll()
    wall, host = time.monotonic() - wall0, helper_cpu_s() - host0
    console = time.process_time() - console0
    print(f"{label:<42} {1000 * wall / n:6.1f} ms wall  host {1000 * host / n:5.1f} ms CPU  "
          f"console {1000 * console / n:4.1f} ms CPU")


async def main(n: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="plateau-status-bench-"))
    sshd = start_sshd(root / "sshd")
    config = fleet_config(root / "hosts", sshd, 1)
    await start_servers(config, root / "flag-cache")
    host = config.hosts[0]
    transport = make_ssh_transport(sshd, python=host.python)
    try:
        await transport.connect()
        life = ServerLifecycle(transport, host)

        async def now() -> object:
            status = await life.status(check_health=False)
            assert status.running
            return status

        async def before() -> object:
            record = await life.read_record()
            assert record is not None and await life._record_alive(record)  # two runs
            return record

        for _ in range(2):  # alternated: this machine is noisy
            await measure("status: record read + probe, one run", now, n)
            await measure("before: record read, then probe (2 runs)", before, n)
    finally:
        await transport.close()
        stop_servers(config)
        sshd.stop()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 100))
