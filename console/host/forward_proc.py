"""A port forward in a process of its own, for a sweep's load: thousands of streamed events a
second never queue on the console's event loop.

The console's forward (console/host/ssh.py `SshPortForward`) relays every byte on the console's
event loop: fine for probes and /metrics, but a sweep at C=256 streams thousands of SSE events
a second through it, and each is two reads, two writes and an SSH packet in that loop, so the
UI's frames and keys wait behind them. This forward is the same code run by
`python -m console.host.forward_child` with its own SSH connection: the parent sends the
transport's options (no secrets: keys stay in their files, the agent in its socket) as one
JSON line on stdin, the child opens the forward and answers `{"port": N}` (or
`{"error": "..."}`), then relays until its stdin closes, which is also how it notices that
the console is gone. The relay is the console's own asyncssh forward, run in this process, or
on request OpenSSH's client (`ssh -N -L`, in C; `ProcessPortForward.start` says when which).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from console import aio
from console.errors import TransportError

START_TIMEOUT_S = 60.0


class ProcessPortForward:
    """A `PortForward` whose relay runs in child processes: one, or several listening on the
    same port (SO_REUSEPORT: the kernel spreads the load's connections over them)."""

    def __init__(self, processes: list[asyncio.subprocess.Process], local_port: int) -> None:
        self._processes = processes
        self._port = local_port

    @property
    def local_port(self) -> int:
        return self._port

    @property
    def pids(self) -> list[int]:
        """The relay processes (for measuring their CPU)."""
        return [process.pid for process in self._processes]

    @classmethod
    async def start(cls, options: dict[str, Any], remote_port: int,
                    relay: str = "python", relays: int = 1) -> ProcessPortForward:
        """`relay`: "python" (asyncssh, the default) or "openssh" (`ssh -N -L`; falls back to
        python where there is no ssh or it fails). `relays`: how many python relay processes,
        each with its own SSH connection (one runs out of CPU first at C >= 256; several only
        pay where there are cores to spare). Measured by tests/bench/bench_sweep_forward.py."""
        shared = relays > 1 and relay == "python"
        first, port = await _start_child(options, remote_port, relay, 0, shared)
        processes = [first]
        try:
            for _ in range(relays - 1 if shared else 0):
                process, _ = await _start_child(options, remote_port, relay, port, True)
                processes.append(process)
        except BaseException:
            for process in processes:
                await stop_child(process)
            raise
        return cls(processes, port)

    async def close(self) -> None:
        for process in self._processes:
            await stop_child(process)


async def _start_child(options: dict[str, Any], remote_port: int, relay: str,
                       listen_port: int, reuse_port: bool
                       ) -> tuple[asyncio.subprocess.Process, int]:
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [root, os.environ.get("PYTHONPATH")]))}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "console.host.forward_child",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL, env=env,
        start_new_session=True,  # a Ctrl-C in the terminal reaches the console only
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    request = {"options": options, "port": remote_port, "relay": relay,
               "listen_port": listen_port, "reuse_port": reuse_port}
    process.stdin.write(json.dumps(request).encode() + b"\n")
    try:
        await process.stdin.drain()
        line = await aio.wait_for(process.stdout.readline(), START_TIMEOUT_S)
        answer = json.loads(line or b"{}")
    except (TimeoutError, ValueError, OSError) as exc:
        answer = {"error": f"no answer ({type(exc).__name__})"}
    if not isinstance(answer, dict) or not isinstance(answer.get("port"), int):
        await stop_child(process)
        why = answer.get("error") if isinstance(answer, dict) else None
        raise TransportError(f"load port forward did not start: {why or 'no answer'}")
    return process, answer["port"]


async def stop_child(process: asyncio.subprocess.Process) -> None:
    if process.stdin is not None:
        with contextlib.suppress(OSError):
            process.stdin.close()
    try:
        await aio.wait_for(process.wait(), 5)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()


def openssh_argv(ssh: str, options: dict[str, Any], local_port: int,
                 remote_port: int) -> list[str]:
    """OpenSSH's client for the same login: the host key must already be in known_hosts (the
    console's own connection checked it first), nothing is asked, no shell or command runs."""
    argv = [ssh, "-N", "-T", "-o", "BatchMode=yes", "-o", "ExitOnForwardFailure=yes",
            "-o", "StrictHostKeyChecking=yes",
            "-o", f"UserKnownHostsFile={options['known_hosts']}",
            "-o", f"ConnectTimeout={max(1, int(options.get('connect_timeout') or 10))}",
            "-o", f"ServerAliveInterval={max(1, int(options.get('keepalive_interval') or 15))}",
            "-L", f"127.0.0.1:{local_port}:127.0.0.1:{remote_port}",
            "-p", str(options.get("port") or 22)]  # fmt: skip
    if not options.get("use_ssh_config", True):
        argv += ["-F", os.devnull]
    for identity in options.get("identity_files") or ():
        argv += ["-i", str(identity)]
    if options.get("username"):
        argv += ["-l", str(options["username"])]
    if options.get("jump_host"):
        argv += ["-J", str(options["jump_host"])]
    return [*argv, "--", str(options["address"])]

