"""The console's side of plateau-hostd (console/host/hostd.py): one helper process per SSH
connection that runs commands and streams without a login shell each time.

Started through the fixed bootstrap (scripts.command_line) as `PYTHON -c LOADER`: the loader
reads the helper's source from the channel's stdin, so nothing is written to the host's disk and
the host's `ps` shows a short line. If it cannot start (no such python), the transport keeps
using one exec channel per command (console/host/ssh.py).
"""

from __future__ import annotations

import asyncio
import base64
import codecs
import contextlib
import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncssh

from console import aio
from console.errors import TransportError
from console.host import scripts
from console.text import sanitize

HOSTD_SOURCE = (Path(__file__).parent / "hostd.py").read_bytes()
LOADER = ("import sys;b=sys.stdin.buffer;n=int(b.readline());"
          "exec(compile(b.read(n),'plateau-hostd','exec'),{'__name__':'__main__'})")
READ_CHUNK = 1 << 16


class HelperUnavailable(Exception):
    """The helper did not start on this connection (the reason is the message)."""


@dataclass(frozen=True)
class HelperResult:
    exit_status: int
    stdout: bytes
    stderr: bytes


class HelperGone(TransportError):
    """The helper's channel closed (the connection dropped) while a command was running."""


class HostHelper:
    """Requests to one running plateau-hostd, answered by id; a reader task dispatches."""

    def __init__(self, process: asyncssh.SSHClientProcess[bytes], host_name: str,
                 home: str) -> None:
        self._process = process
        self.host_name = host_name
        self.home = home
        self._next_id = 0
        self._runs: dict[int, asyncio.Future[HelperResult]] = {}
        self._streams: dict[int, HelperStream] = {}
        self._gone: str | None = None
        self._reader: asyncio.Task[None] | None = None
        self._stderr: asyncio.Task[None] | None = None
        self.stderr_tail = b""
        self.pid = 0  # the helper's pid on the host (tests and diagnostics)
        self.ack_every = 1

    # -- start ------------------------------------------------------------------------------

    @classmethod
    async def start(cls, connection: asyncssh.SSHClientConnection, python: str,
                    host_name: str, timeout: float) -> HostHelper:
        """Start the helper and read its hello; HelperUnavailable says why it could not."""
        command = scripts.command_line([python, "-c", LOADER, "plateau-hostd"])
        try:
            process = await connection.create_process(command, encoding=None)
        except (asyncssh.Error, OSError) as exc:
            raise HelperUnavailable(f"cannot open a channel: {exc}") from None
        try:
            process.stdin.write(b"%d\n" % len(HOSTD_SOURCE) + HOSTD_SOURCE)
            hello, rest = await aio.wait_for(_read_hello(process), timeout)
        except (TimeoutError, asyncssh.Error, OSError, ValueError) as exc:  # incl. BrokenPipe
            process.close()
            why = await _stderr_tail(process) or str(exc) or type(exc).__name__
            raise HelperUnavailable(why) from None
        home = str(hello.get("home", ""))
        if not home.startswith("/"):
            process.close()
            raise HelperUnavailable(f"no absolute home directory: {home!r}")
        helper = cls(process, host_name, home.rstrip("/") or "/")
        helper.pid = int(hello.get("pid", 0))
        # consumed stream bytes go back to the helper in batches of a quarter of its window
        helper.ack_every = max(1, int(hello.get("window", 1 << 19)) // 4)
        helper._reader = asyncio.ensure_future(helper._read(rest))
        helper._stderr = asyncio.ensure_future(helper._drain_stderr())
        return helper

    async def _drain_stderr(self) -> None:
        """Keep the helper's stderr moving (an unread one would stall the channel's window);
        its last words are kept for the message if it dies."""
        with contextlib.suppress(asyncssh.Error, OSError, asyncio.CancelledError):
            while chunk := await self._process.stderr.read(READ_CHUNK):
                self.stderr_tail = (self.stderr_tail + chunk)[-2048:]

    # -- requests ---------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        return self._gone is None

    def _send(self, message: dict[str, Any]) -> None:
        if self._gone is not None:
            raise HelperGone(f"{self.host_name}: {self._gone}")
        data = json.dumps(message, separators=(",", ":")).encode("utf-8") + b"\n"
        try:
            self._process.stdin.write(data)
        except (asyncssh.Error, OSError, BrokenPipeError) as exc:
            self._lost(f"command helper channel closed: {exc}")
            raise HelperGone(f"{self.host_name}: {self._gone}") from None

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    async def run(self, argv: Sequence[str], stdin: bytes | None, timeout: float | None,
                  *, program: bool = False) -> HelperResult:
        """Run ARGV; on timeout its process group is ended and TimeoutError raised.
        `program`: ARGV is `PYTHON PROGRAM ARGS` with this helper's python and one of our host
        programs, which the helper then runs in a fork of itself (hostd.py)."""
        request_id = self._new_id()
        future: asyncio.Future[HelperResult] = asyncio.get_running_loop().create_future()
        self._runs[request_id] = future
        try:
            self._send({"op": "run", "id": request_id, "argv": list(argv), "py": program,
                        "stdin": None if stdin is None else _b64(stdin)})
            if timeout is None:
                return await future
            return await aio.wait_for(asyncio.shield(future), timeout)
        except (TimeoutError, asyncio.CancelledError):
            with contextlib.suppress(HelperGone):
                self._send({"op": "kill", "id": request_id})
            raise
        finally:
            self._runs.pop(request_id, None)

    async def install(self, directory: str, path: str, digest: str,
                      data: bytes) -> HelperResult:
        """scripts.INSTALL_PROGRAM done by the helper itself (no shell, no sha256sum)."""
        request_id = self._new_id()
        future: asyncio.Future[HelperResult] = asyncio.get_running_loop().create_future()
        self._runs[request_id] = future
        try:
            self._send({"op": "install", "id": request_id, "dir": directory, "path": path,
                        "sha256": digest, "data": _b64(data)})
            return await aio.wait_for(asyncio.shield(future), 60)
        finally:
            self._runs.pop(request_id, None)

    def stream(self, argv: Sequence[str]) -> HelperStream:
        request_id = self._new_id()
        stream = HelperStream(self, request_id)
        self._streams[request_id] = stream
        self._send({"op": "stream", "id": request_id, "argv": list(argv)})
        return stream

    def _ack(self, request_id: int, count: int) -> None:
        with contextlib.suppress(HelperGone):
            self._send({"op": "ack", "id": request_id, "n": count})

    def _end_stream(self, request_id: int) -> None:
        with contextlib.suppress(HelperGone):
            self._send({"op": "kill", "id": request_id})

    def _forget_stream(self, request_id: int) -> None:
        self._streams.pop(request_id, None)

    # -- replies ----------------------------------------------------------------------------

    async def _read(self, pending: bytes) -> None:
        buffer = pending
        why = "command helper ended"
        try:
            while True:
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    self._dispatch(line)
                chunk = await self._process.stdout.read(READ_CHUNK)
                if not chunk:
                    break
                buffer += chunk
        except (asyncssh.Error, OSError) as exc:
            why = f"command helper channel broke: {exc}"
        except asyncio.CancelledError:
            why = "command helper closed"
        self._lost(f"connection lost ({why})")

    def _dispatch(self, line: bytes) -> None:
        try:
            message = json.loads(line)
            request_id = int(message["id"])
        except (ValueError, KeyError, TypeError):
            return  # only the helper writes here; a line it did not write is ignored
        if "data" in message:
            stream = self._streams.get(request_id)
            if stream is not None:
                stream._feed(base64.b64decode(message["data"]))
            return
        status = int(message.get("exit", 255))
        future = self._runs.get(request_id)
        if future is not None and not future.done():
            future.set_result(HelperResult(status, base64.b64decode(message.get("out", "")),
                                           base64.b64decode(message.get("err", ""))))
            return
        stream = self._streams.pop(request_id, None)
        if stream is not None:
            stream._finish(status)

    def _lost(self, why: str) -> None:
        if self._gone is not None:
            return
        self._gone = why
        for future in self._runs.values():
            if not future.done():
                future.set_exception(HelperGone(f"{self.host_name}: {why}"))
        for stream in list(self._streams.values()):
            stream._finish(None)
        self._streams.clear()

    async def close(self) -> None:
        self._lost("command helper closed")
        with contextlib.suppress(asyncssh.Error, OSError, BrokenPipeError):
            self._process.stdin.write_eof()  # the helper ends every command it runs
        self._process.close()
        for task in (self._reader, self._stderr):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task


class HelperStream:
    """A LineStream over the helper: stdout lines of one command, decoded as the exec path
    decoded them (UTF-8, undecodable bytes replaced). Closing it ends the command's group."""

    def __init__(self, helper: HostHelper, request_id: int) -> None:
        self._helper = helper
        self._id = request_id
        self._chunks: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._exit_status: int | None = None
        self._unacked = 0  # bytes consumed and not yet returned to the helper
        self._ended = False
        self._closed = False

    @property
    def exit_status(self) -> int | None:
        return self._exit_status

    def _feed(self, chunk: bytes) -> None:
        self._chunks.put_nowait(chunk)

    def _finish(self, status: int | None) -> None:
        if not self._ended:
            self._ended = True
            self._exit_status = status
            self._chunks.put_nowait(None)

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        partial = ""
        while True:
            chunk = await self._chunks.get()
            if chunk is None:
                break
            self._consumed(len(chunk))
            *lines, partial = (partial + decoder.decode(chunk)).split("\n")
            for line in lines:
                yield line
        partial += decoder.decode(b"", final=True)
        if partial:
            yield partial
        # A cut (the helper's channel closed) ends the lines with exit_status None, as a cut
        # exec channel did: callers tell it from an exit by that.

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if not self._ended:
            self._helper._end_stream(self._id)
            with contextlib.suppress(TimeoutError):
                await aio.wait_for(self._wait_end(), 5)
        self._helper._forget_stream(self._id)

    async def _wait_end(self) -> None:
        while not self._ended:
            chunk = await self._chunks.get()
            if chunk is None:
                break
            self._consumed(len(chunk))

    def _consumed(self, count: int) -> None:
        """Return credit in batches: the helper stops at its window of bytes in flight, and
        all but less than a quarter of it consumed has been returned, so it never waits on a
        consumer that is reading."""
        self._unacked += count
        if self._unacked >= self._helper.ack_every:
            self._helper._ack(self._id, self._unacked)
            self._unacked = 0

    async def __aenter__(self) -> HelperStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def _read_hello(process: asyncssh.SSHClientProcess[bytes]) -> tuple[dict[str, Any], bytes]:
    """The hello line after the login's noise and scripts.OUTPUT_MARK; the bytes read past it."""
    buffer = b""
    marked = False
    while True:
        chunk = await process.stdout.read(READ_CHUNK)
        if not chunk:
            raise ValueError("the helper exited before saying hello")
        buffer += chunk
        if not marked:
            at = buffer.find(scripts.OUTPUT_MARK.encode())
            end = buffer.find(b"\n", at) if at >= 0 else -1
            if end < 0:
                if len(buffer) > 1 << 20:
                    raise ValueError("no output mark in 1 MiB of login output")
                continue
            buffer, marked = buffer[end + 1:], True
        line, newline, rest = buffer.partition(b"\n")
        if newline:
            hello = json.loads(line)
            if not isinstance(hello, dict) or hello.get("hello") != 1:
                shown = sanitize(line[:100].decode(errors="replace"))
                raise ValueError(f"unexpected first line: {shown}")
            return hello, rest


async def _stderr_tail(process: asyncssh.SSHClientProcess[bytes]) -> str:
    with contextlib.suppress(TimeoutError, asyncssh.Error, OSError):
        data = await aio.wait_for(process.stderr.read(4096), 1.0)
        return sanitize(" ".join(data.decode("utf-8", "replace").split()))[:300]
    return ""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
