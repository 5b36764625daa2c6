"""The load worker's streaming HTTP/1.1 client: bytes are stamped in the loop's own callback.

aiohttp hands a streamed chunk over through its StreamReader: a future resolved in
`data_received`, a task switch, an async generator step, per chunk per stream. At 1024
streams in one process that queue of wakeups is the client's error (a Rust client
beat it at C >= 256). Here a connection is an `asyncio.Protocol`: `data_received`
takes `perf_counter_ns()` first, undoes the chunked transfer coding and hands the payload to
the request's SSE parser (console.bench.sse) in the same callback; the request's coroutine
wakes once, when the response ends. Requests are pre-built bytes written with one
`transport.write`. Plain `http://` only (the worker keeps aiohttp for anything else), keep-alive
connections pooled per host, no compression (`Accept-Encoding: identity`), no redirects.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

MAX_HEAD = 64 * 1024
ERROR_BODY = 300
CONNECT_TIMEOUT_S = 10.0

Feed = Callable[[int, bytes], None]


class HttpError(Exception):
    """The server's response could not be read as HTTP/1.1."""


class _Exchange:
    """One response being read: status line and headers, then the body."""

    __slots__ = ("buf", "chunk_left", "chunked", "done", "error_body", "feed", "got_bytes",
                 "head", "in_body", "keep_alive", "need_crlf", "remaining", "status")

    def __init__(self, feed: Feed, done: asyncio.Future[None]) -> None:
        self.feed = feed
        self.done = done
        self.head = b""
        self.in_body = False
        self.status = 0
        self.chunked = False
        self.remaining = -1  # Content-Length left; -1: until the connection closes
        self.keep_alive = True
        self.buf = b""
        self.chunk_left = 0  # -1: the last chunk was read, its CRLF is next
        self.need_crlf = False
        self.error_body = b""
        self.got_bytes = False

    def receive(self, now: int, data: bytes) -> None:
        self.got_bytes = True
        if not self.in_body:
            self.head += data
            end = self.head.find(b"\r\n\r\n")
            if end < 0:
                if len(self.head) > MAX_HEAD:
                    self.fail(HttpError("response headers too large"))
                return
            data = self.head[end + 4:]
            self._parse_head(self.head[:end])
            self.head = b""
            self.in_body = True
            if self.done.done():
                return
            if not self.chunked and self.remaining == 0:
                self._complete()
                return
        if not data:
            return
        if self.chunked:
            self._dechunk(now, data)
        else:
            self._sized(now, data)

    def _parse_head(self, head: bytes) -> None:
        lines = head.split(b"\r\n")
        parts = lines[0].split(b" ", 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
            self.fail(HttpError(f"not an HTTP/1.1 response: {lines[0][:80]!r}"))
            return
        self.status = int(parts[1])
        self.keep_alive = parts[0] == b"HTTP/1.1"
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            value = value.strip().lower()
            if name == b"transfer-encoding" and value.endswith(b"chunked"):
                self.chunked = True
            elif name == b"content-length" and value.isdigit():
                self.remaining = int(value)
            elif name == b"connection":
                self.keep_alive = value != b"close" and (self.keep_alive or value == b"keep-alive")
        if self.remaining < 0 and not self.chunked:
            self.keep_alive = False  # the body ends when the connection does

    def _deliver(self, now: int, payload: bytes) -> None:
        if self.status == 200:
            self.feed(now, payload)
        elif len(self.error_body) < ERROR_BODY:
            self.error_body += payload[: ERROR_BODY - len(self.error_body)]

    def _sized(self, now: int, data: bytes) -> None:
        if self.remaining >= 0:
            data = data[: self.remaining]
            self.remaining -= len(data)
        self._deliver(now, data)
        if self.remaining == 0:
            self._complete()

    def _dechunk(self, now: int, data: bytes) -> None:
        buf = self.buf + data if self.buf else data
        pos = 0
        out: list[bytes] = []
        finished = False
        while True:
            if self.chunk_left < 0:  # after the last chunk: its CRLF (we send no TE: trailers)
                if len(buf) - pos < 2:
                    break
                if buf[pos:pos + 2] != b"\r\n":
                    self.keep_alive = False  # trailers after all: do not reuse
                pos += 2
                finished = True
                break
            if self.chunk_left:
                piece = buf[pos:pos + self.chunk_left]
                out.append(piece)
                pos += len(piece)
                self.chunk_left -= len(piece)
                if self.chunk_left:
                    break
                self.need_crlf = True
            if self.need_crlf:
                if len(buf) - pos < 2:
                    break
                pos += 2
                self.need_crlf = False
            end = buf.find(b"\r\n", pos)
            if end < 0:
                break
            try:
                size = int(buf[pos:end].split(b";", 1)[0], 16)
            except ValueError:
                self.fail(HttpError(f"bad chunk size {buf[pos:end][:40]!r}"))
                return
            pos = end + 2
            self.chunk_left = size if size else -1
        self.buf = b"" if finished else buf[pos:]
        if out:
            self._deliver(now, b"".join(out) if len(out) > 1 else out[0])
        if finished:
            self._complete()

    def _complete(self) -> None:
        if not self.done.done():
            self.done.set_result(None)

    def fail(self, exc: BaseException) -> None:
        self.keep_alive = False
        if not self.done.done():
            self.done.set_exception(exc)

    def closed(self) -> None:
        """The connection ended: a close-delimited body is complete, anything else is cut."""
        if self.in_body and not self.chunked and self.remaining < 0:
            self._complete()
        else:
            self.fail(ConnectionResetError("the server closed the connection mid-response"))


class _Connection(asyncio.Protocol):
    __slots__ = ("exchange", "lost", "transport")

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.exchange: _Exchange | None = None
        self.lost = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter_ns()  # first: this is the chunk's arrival time
        exchange = self.exchange
        if exchange is not None:
            exchange.receive(now, data)
        elif self.transport is not None:
            self.transport.close()  # bytes nobody asked for: this connection is unusable

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if self.exchange is not None:
            self.exchange.closed()

    def usable(self) -> bool:
        return not self.lost and self.transport is not None and not self.transport.is_closing()


class H1Client:
    """Keep-alive connections to one `http://host:port`, one request at a time on each."""

    def __init__(self, base_url: str) -> None:
        parts = urlsplit(base_url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"H1Client speaks plain http:// only, not {base_url!r}")
        self.host = parts.hostname
        self.port = parts.port or 80
        self.prefix = parts.path.rstrip("/")
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.host_header = f"{host}:{self.port}" if parts.port else host
        self.idle: list[_Connection] = []

    @staticmethod
    def supports(base_url: str) -> bool:
        return urlsplit(base_url).scheme == "http"

    def request_bytes(self, path: str, body: bytes, headers: Sequence[tuple[str, str]]) -> bytes:
        lines = [f"POST {self.prefix}{path} HTTP/1.1", f"Host: {self.host_header}",
                 "Content-Type: application/json", "Accept-Encoding: identity",
                 f"Content-Length: {len(body)}"]
        lines += [f"{name}: {value}" for name, value in headers]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(CONNECT_TIMEOUT_S):
            _, protocol = await loop.create_connection(_Connection, self.host, self.port)
        return protocol

    async def post(self, request: bytes, feed: Feed) -> tuple[int, bytes]:
        """Send `request` (from `request_bytes`), feed the 200 body to `feed` as it arrives;
        returns (status, the first bytes of a non-200 body). A reused connection the server
        had already closed is retried once on a fresh one."""
        while self.idle:
            conn = self.idle.pop()
            if conn.usable():
                try:
                    return await self._exchange(conn, request, feed)
                except ConnectionResetError as exc:
                    if getattr(exc, "fresh_bytes", True):
                        raise
                    break  # stale keep-alive connection: retry below, once
        return await self._exchange(await self._connect(), request, feed)

    async def _exchange(self, conn: _Connection, request: bytes,
                        feed: Feed) -> tuple[int, bytes]:
        loop = asyncio.get_running_loop()
        exchange = _Exchange(feed, loop.create_future())
        conn.exchange = exchange
        assert conn.transport is not None
        conn.transport.write(request)
        try:
            await exchange.done
        except ConnectionResetError as exc:
            exc.fresh_bytes = exchange.got_bytes  # type: ignore[attr-defined]
            raise
        finally:
            conn.exchange = None
            if exchange.keep_alive and exchange.done.done() and not exchange.done.cancelled() \
                    and exchange.done.exception() is None and conn.usable():
                self.idle.append(conn)
            elif conn.transport is not None:
                conn.transport.close()  # mid-response or told to close: never reused
        return exchange.status, exchange.error_body

    def close(self) -> None:
        for conn in self.idle:
            if conn.transport is not None:
                conn.transport.close()
        self.idle.clear()


def client_for(clients: dict[str, Any], base_url: str) -> H1Client:
    client = clients.get(base_url)
    if client is None:
        client = clients[base_url] = H1Client(base_url)
    return client
