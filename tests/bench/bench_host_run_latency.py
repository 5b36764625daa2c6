"""Round-trip latency of `run` over the open SshTransport connection vs spawning
`ssh host cmd` per call (and LocalTransport as a floor), against a real sshd on loopback.

    .venv/bin/python tests/bench/bench_host_run_latency.py [N] [SHELL]

SHELL (bash, dash, zsh, fish, tcsh; needs root) logs in as the non-root test user with that
login shell instead of the current user. Every `run` goes through the login-shell-proof
bootstrap (console/host/scripts.py), so this also measures what it costs.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from console.host.local import LocalTransport
from console.host.transport import CommandResult
from tests.support.host_fixtures import make_ssh_transport, make_user_transport
from tests.support.sshd import start_sshd


def _summary(name: str, samples: list[float]) -> tuple[str, float]:
    p50 = statistics.median(samples) * 1000
    p90 = sorted(samples)[int(len(samples) * 0.9) - 1] * 1000
    print(f"{name:<34} p50 {p50:7.2f} ms   p90 {p90:7.2f} ms   n={len(samples)}")
    return name, p50


async def _time_async(call: Callable[[], Awaitable[CommandResult]], n: int) -> list[float]:
    samples: list[float] = []
    for _ in range(n):
        start = time.perf_counter()
        result = await call()
        samples.append(time.perf_counter() - start)
        assert result.ok
    return samples


def _time_ssh_spawn(argv: list[str], n: int) -> list[float]:
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdin=subprocess.DEVNULL)
        samples.append(time.perf_counter() - start)
    return samples


async def main(n: int, shell: str | None) -> None:
    sshd = start_sshd(Path(tempfile.mkdtemp(prefix="plateau-bench-sshd-")))
    try:
        if shell:
            user = sshd.login_as(shell)
            transport = make_user_transport(user)
            spawn = user.ssh_argv("true")
            print(f"login: {user.user} (login shell {user.shell})")
        else:
            transport = make_ssh_transport(sshd)
            spawn = [
                "ssh", "-p", str(sshd.port), "-i", str(sshd.client_key), "-F", "/dev/null",
                "-o", f"UserKnownHostsFile={sshd.known_hosts}", "-o",
                "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", f"{sshd.user}@127.0.0.1",
                "true",
            ]
            print(f"login: {sshd.user}")
        await transport.connect()
        local = LocalTransport()
        await _time_async(lambda: transport.run(["true"]), 5)  # warm up
        _, open_conn = _summary(
            "SshTransport.run (open connection)",
            await _time_async(lambda: transport.run(["true"]), n),
        )
        _, spawned = _summary("ssh host true (new process)", _time_ssh_spawn(spawn, n))
        _summary("LocalTransport.run", await _time_async(lambda: local.run(["true"]), n))
        print(f"ratio: spawning ssh per call is {spawned / open_conn:.1f}x slower (p50)")
        await transport.close()
    finally:
        sshd.stop()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 50,
                     sys.argv[2] if len(sys.argv) > 2 else None))
