"""The child side of `ProcessPortForward` (console/host/forward_proc.py): run as
`python -m console.host.forward_child`, it reads the transport's options as one JSON line on
stdin, opens the forward with a connection of its own and answers `{"port": N}` (or
`{"error": "..."}`), then relays until its stdin closes. A module of its own so that the
console's side never imports the SSH transport that this side runs (no import cycle).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import socket
import sys
import time
from pathlib import Path
from typing import Any

from console.host.forward_proc import openssh_argv, stop_child
from console.host.ssh import SshTransport


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
    await stop_child(process)
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
            await stop_child(relay[0])
        return 0
    return await _python_relay(reader, options, int(request["port"]),
                               int(request.get("listen_port") or 0),
                               bool(request.get("reuse_port")))


async def _python_relay(reader: asyncio.StreamReader, options: dict[str, Any],
                        remote_port: int, listen_port: int, reuse_port: bool) -> int:
    if options.get("known_hosts"):
        options["known_hosts"] = Path(options["known_hosts"])
    transport = SshTransport(**options)
    try:
        await transport.connect()
        forward = await transport.forward_port(remote_port, listen_port, reuse_port)
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
