"""A port forward in a process of its own, for a sweep's load (issue 19 item 1).

The console's forward (console/host/ssh.py `SshPortForward`) relays every byte on the console's
event loop: fine for probes and /metrics, but a sweep at C=256 streams thousands of SSE events
a second through it, and each is two reads, two writes and an SSH packet in that loop, so the
UI's frames and keys wait behind them. This forward is the same code run by
`python -m console.host.forward_proc` with its own SSH connection: the parent sends the
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
import shutil
import socket
import sys
import time
from pathlib import Path
from typing import Any

from console import aio
from console.errors import TransportError

START_TIMEOUT_S = 60.0


class ProcessPortForward:
    """A `PortForward` whose relay runs in a child process."""

    def __init__(self, process: asyncio.subprocess.Process, local_port: int) -> None:
        self._process = process
        self._port = local_port

    @property
    def local_port(self) -> int:
        return self._port

    @classmethod
    async def start(cls, options: dict[str, Any], remote_port: int,
                    relay: str = "python") -> ProcessPortForward:
        """`relay`: "python" (asyncssh, the default) or "openssh" (`ssh -N -L`; falls back to
        python where there is no ssh or it fails). Measured by tests/bench/bench_sweep_forward.py:
        OpenSSH costs far less CPU per byte (C=1024: +33 points of TTFT error over direct
        against +1272 here) but adds a ~40 ms ITL tail at C=64-256 (+37 points of ITL p99
        against +4), like Nagle's algorithm against delayed ACKs on the SSH connection."""
        root = str(Path(__file__).resolve().parents[2])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            filter(None, [root, os.environ.get("PYTHONPATH")]))}
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "console.host.forward_proc",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, env=env,
            start_new_session=True,  # a Ctrl-C in the terminal reaches the console only
        )  # fmt: skip
        assert process.stdin is not None and process.stdout is not None
        request = {"options": options, "port": remote_port, "relay": relay}
        process.stdin.write(json.dumps(request).encode() + b"\n")
        try:
            await process.stdin.drain()
            line = await aio.wait_for(process.stdout.readline(), START_TIMEOUT_S)
            answer = json.loads(line or b"{}")
        except (TimeoutError, ValueError, OSError) as exc:
            answer = {"error": f"no answer ({type(exc).__name__})"}
        if not isinstance(answer, dict) or not isinstance(answer.get("port"), int):
            await _stop(process)
            why = answer.get("error") if isinstance(answer, dict) else None
            raise TransportError(f"load port forward did not start: {why or 'no answer'}")
        return cls(process, answer["port"])

    async def close(self) -> None:
        await _stop(self._process)


async def _stop(process: asyncio.subprocess.Process) -> None:
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


async def _openssh(options: dict[str, Any], remote_port: int
                   ) -> tuple[asyncio.subprocess.Process, int] | None:
    """`ssh -N -L` relaying in C (far cheaper per byte than asyncssh in Python); None when
    there is no `ssh` here or it could not open the forward (then the Python relay runs)."""
    ssh = shutil.which("ssh")
    if ssh is None or not options.get("known_hosts"):
        return None
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    process = await asyncio.create_subprocess_exec(
        *openssh_argv(ssh, options, port, remote_port), stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    deadline = time.monotonic() + float(options.get("connect_timeout") or 10) + 5
    while time.monotonic() < deadline and process.returncode is None:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.05)
            continue
        writer.close()
        return process, port
    await _stop(process)
    return None


async def _serve() -> int:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    request = json.loads(await reader.readline())
    options = dict(request["options"])
    relay = await _openssh(options, int(request["port"])) \
        if request.get("relay") == "openssh" else None
    if relay is not None:
        _answer({"port": relay[1], "relay": "openssh"})
        try:
            while await reader.read(4096):  # until the parent closes our stdin (or dies)
                pass
        finally:
            relay[0].terminate()
            await _stop(relay[0])
        return 0
    return await _python_relay(reader, options, int(request["port"]))


async def _python_relay(reader: asyncio.StreamReader, options: dict[str, Any],
                        remote_port: int) -> int:
    from console.host.ssh import SshTransport

    if options.get("known_hosts"):
        options["known_hosts"] = Path(options["known_hosts"])
    transport = SshTransport(**options)
    try:
        await transport.connect()
        forward = await transport.forward_port(remote_port)
    except Exception as exc:  # one line to the parent, never a traceback
        _answer({"error": f"{type(exc).__name__}: {exc}"[:300]})
        await transport.close()
        return 1
    _answer({"port": forward.local_port})
    try:
        while await reader.read(4096):  # until the parent closes our stdin (or dies)
            pass
    finally:
        await forward.close()
        await transport.close()
    return 0


def _answer(data: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(data) + "\n")
    sys.stdout.flush()


def main() -> int:
    with contextlib.suppress(KeyboardInterrupt):
        return asyncio.run(_serve())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
