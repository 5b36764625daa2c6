"""Round-trip latency of `run` over the open SshTransport connection vs spawning
`ssh host cmd` per call (and LocalTransport as a floor), against a real sshd on loopback;
and the command helper (plateau-hostd, one per connection) against one exec channel per
command (what a host without the helper's python gets: every command pays the login shell),
for a plain command and for a host script (a status poll's probe: a fork of the helper vs a
new interpreter).

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
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from console.host.local import LocalTransport
from console.host.ssh import SshTransport
from tests.support.host_fixtures import make_ssh_transport, make_user_transport
from tests.support.sshd import start_sshd


def _summary(name: str, samples: list[float]) -> tuple[str, float]:
    p50 = statistics.median(samples) * 1000
    p90 = sorted(samples)[int(len(samples) * 0.9) - 1] * 1000
    print(f"{name:<34} p50 {p50:7.2f} ms   p90 {p90:7.2f} ms   n={len(samples)}")
    return name, p50


async def _time_async(call: Callable[[], Awaitable[object]], n: int) -> list[float]:
    samples: list[float] = []
    for _ in range(n):
        start = time.perf_counter()
        await call()  # a failed command raises (run) or is checked by the caller
        samples.append(time.perf_counter() - start)
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
        await _helper_vs_exec(transport, n, shell)
        await transport.close()
    finally:
        sshd.stop()


async def _helper_vs_exec(transport: SshTransport, n: int, shell: str | None) -> None:
    """The same connection options without the helper (its python missing): the peer."""
    from console.server.hostscript import run_host_script

    exec_only = SshTransport(transport.host_name, "127.0.0.1",
                             **{**_options(transport), "python": "/nonexistent/python3"})
    await exec_only.connect()
    python = str(transport.options()["python"])  # the helper's own: its programs are forked
    async def true(t: SshTransport) -> object:
        result = await t.run(["true"])
        assert result.ok
        return result

    async def probe(t: SshTransport) -> object:
        return await run_host_script(t, python, "probe", {"pid": 1})

    try:
        pairs = []
        for label, call in (("true", true), ("host script probe", probe)):
            times = []
            for name, which in (("helper", transport), ("exec channel", exec_only)):
                await _time_async(partial(call, which), 3)
                samples = await _time_async(partial(call, which), n)
                times.append(_summary(f"{label}: {name}", samples)[1])
            pairs.append((label, times[1] / times[0]))
        for label, ratio in pairs:
            print(f"ratio ({label}): one exec channel per command is {ratio:.1f}x the "
                  f"helper's latency (p50)")
    finally:
        await exec_only.close()


def _options(transport: SshTransport) -> dict[str, Any]:
    options = transport.options()
    for key in ("host_name", "address"):
        options.pop(key)
    options["known_hosts"] = Path(str(options["known_hosts"]))
    return options


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 50,
                     sys.argv[2] if len(sys.argv) > 2 else None))
