"""A port forward's relay as two protocols wired to each other.

Each accepted local socket gets a direct-tcpip channel; bytes go from one side's
`data_received` straight into the other side's `write`, with no coroutine, reader or drain in
between. The stream-based relay this replaces woke two coroutines per chunk per direction
(read → write → drain), which at a sweep's thousands of SSE events a second was most of the
relay's CPU. Backpressure is kept end to end: when one side's write buffer fills, the other
side stops reading (`pause_writing` → `pause_reading`), so a slow reader holds the sender's
window instead of growing a buffer here.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

import asyncssh

OpenChannel = Callable[["RemoteSide"], Awaitable[object]]


class RemoteSide(asyncssh.SSHTCPSession[bytes]):
    """The SSH channel's end: what the host sends goes to the local socket."""

    def __init__(self, local: LocalSide) -> None:
        self._local = local
        self.channel: asyncssh.SSHTCPChannel[bytes] | None = None

    def connection_made(self, chan: asyncssh.SSHTCPChannel[bytes]) -> None:
        self.channel = chan

    def data_received(self, data: bytes, datatype: asyncssh.DataType) -> None:
        self._local.write(data)

    def eof_received(self) -> bool:
        self._local.write_eof()
        return True  # keep the channel half-open: the local side may still be sending

    def connection_lost(self, exc: Exception | None) -> None:
        self._local.close()

    def pause_writing(self) -> None:
        self._local.pause_reading()

    def resume_writing(self) -> None:
        self._local.resume_reading()


class LocalSide(asyncio.Protocol):
    """An accepted local socket: what the client sends goes to the SSH channel, once open."""

    def __init__(self, open_channel: OpenChannel, tasks: set[asyncio.Task[Any]]) -> None:
        self._open_channel = open_channel
        self._tasks = tasks
        self._transport: asyncio.Transport | None = None
        self._remote = RemoteSide(self)
        self._early: list[bytes] = []
        self._early_eof = False
        self._closed = False

    # -- the local socket -----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        transport.pause_reading()  # nothing to send it to until the channel is open
        task = asyncio.get_running_loop().create_task(self._connect())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _connect(self) -> None:
        try:
            await self._open_channel(self._remote)
        except Exception:  # asyncssh.Error, OSError, TransportError: the socket is dropped
            self.close()
            return
        channel = self._remote.channel
        if channel is None or self._closed:
            self.close()
            return
        for data in self._early:
            channel.write(data)
        self._early.clear()
        if self._early_eof:
            channel.write_eof()
        elif self._transport is not None and not self._transport.is_closing():
            self._transport.resume_reading()

    def data_received(self, data: bytes) -> None:
        channel = self._remote.channel
        if channel is None:
            self._early.append(data)
        else:
            channel.write(data)

    def eof_received(self) -> bool:
        channel = self._remote.channel
        if channel is None:
            self._early_eof = True
        else:
            with contextlib.suppress(asyncssh.Error, OSError):
                channel.write_eof()
        return True  # half-close: the answer may still be coming

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        if self._remote.channel is not None:
            self._remote.channel.close()

    def pause_writing(self) -> None:
        if self._remote.channel is not None:
            self._remote.channel.pause_reading()

    def resume_writing(self) -> None:
        if self._remote.channel is not None:
            self._remote.channel.resume_reading()

    # -- called by the remote side ----------------------------------------------------------

    def write(self, data: bytes) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.write(data)

    def write_eof(self) -> None:
        if self._transport is not None and not self._transport.is_closing():
            with contextlib.suppress(OSError, RuntimeError):
                self._transport.write_eof()

    def pause_reading(self) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.pause_reading()

    def resume_reading(self) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.resume_reading()

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()
        if self._remote.channel is not None:
            self._remote.channel.close()
