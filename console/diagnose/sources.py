"""Where a sweep's evidence comes from: three protocols and their two kinds of source.

    sources = EvidenceSources(log=RemoteLog(transport, path), gpu=collector,
                              metrics=ScrapedMetrics(base_url))

A standalone source observes the host itself (the CLI: `plateau sweep` has nothing else
running). A tee (`LogTee`, `Tee`) is fed by what a console session already runs (its log
follower, its GPU agent, its `/metrics` scrape), so a console sweep observes the host once and
the Why view's evidence is the data the operator watched (console/session/evidence_taps.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

import httpx

from console.host.transport import Transport
from console.text import sanitize

if TYPE_CHECKING:
    from console.gpu.models import GpuEvent

METRICS_INTERVAL_S = 1.0
MAX_READ_BYTES = 64 * 1024 * 1024  # per step: a runaway log cannot pin unbounded memory
STARTUP_BYTES = 4 * 1024 * 1024  # the head of the log holds the startup lines

T = TypeVar("T")


class LogSource(Protocol):
    async def read_new(self) -> list[str]:
        """The complete lines written since the previous call (the first call: the head of
        the log, where the startup lines are)."""
        ...


class SampleSource(Protocol):
    """The GPU agent's events: a GpuHeader (the topology), then samples."""

    def __aiter__(self) -> AsyncIterator[GpuEvent]: ...

    async def close(self) -> None: ...


class MetricsSource(Protocol):
    """The `/metrics` pages (their text), one per scrape; ends when the server has none."""

    def __aiter__(self) -> AsyncIterator[str]: ...

    async def close(self) -> None: ...


@dataclass(frozen=True)
class EvidenceSources:
    """Every source is optional: a `--url` sweep has no log and no GPUs."""

    log: LogSource | None = None
    gpu: SampleSource | None = None
    metrics: MetricsSource | None = None


# -- standalone ------------------------------------------------------------------------------


class LocalLog:
    """A log file on this machine. The first read returns the head (the startup lines) and
    moves to the end; later reads return what was appended since."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.offset: int | None = None

    async def read_new(self) -> list[str]:
        return await asyncio.to_thread(self._read)

    def _read(self) -> list[str]:
        try:
            with self.path.open("rb") as handle:
                if self.offset is None:
                    data = handle.read(STARTUP_BYTES)
                    self.offset = handle.seek(0, 2)
                    return _complete_lines(data)[0]
                handle.seek(self.offset)
                data = handle.read(MAX_READ_BYTES)
        except OSError:
            return []
        lines, used = _complete_lines(data)
        self.offset += used
        return lines


class RemoteLog:
    """A log file on a host, read through the transport (`dd` from a byte offset, `stat` for
    the size: argv lists, no shell). First read: the head (startup lines), then the end."""

    def __init__(self, transport: Transport, path: str) -> None:
        self.transport = transport
        self.path = path
        self.offset: int | None = None

    async def read_new(self) -> list[str]:
        if self.offset is None:
            head = await self._dd(0, STARTUP_BYTES)
            size = await self.transport.run(["stat", "-c", "%s", self.path])
            text = (size.stdout or "").strip()
            if not size.ok or not text.isdigit():
                return []
            self.offset = int(text)
            return _complete_lines(head)[0]
        lines, used = _complete_lines(await self._dd(self.offset, MAX_READ_BYTES))
        self.offset += used
        return lines

    async def _dd(self, skip: int, count: int) -> bytes:
        result = await self.transport.run([
            "dd", f"if={self.path}", "iflag=skip_bytes,count_bytes", f"skip={skip}",
            f"count={count}", "bs=1M", "status=none"])
        if not result.ok:
            return b""
        out = result.stdout
        return out if isinstance(out, bytes) else str(out).encode("utf-8", "replace")


def _complete_lines(data: bytes) -> tuple[list[str], int]:
    """The complete lines in `data` (sanitised) and how many bytes they used."""
    cut = data.rfind(b"\n")
    if cut < 0:
        return [], 0
    text = data[: cut + 1].decode("utf-8", "replace")
    return [sanitize(line) for line in text.splitlines()], cut + 1


class ScrapedMetrics:
    """Scrapes `base_url/metrics` every `interval` seconds; a 404 (no --enable-metrics) ends
    it, a failed request is skipped."""

    def __init__(self, base_url: str, headers: Sequence[tuple[str, str]] = (),
                 interval: float = METRICS_INTERVAL_S) -> None:
        self.base_url = base_url.rstrip("/")
        self.headers = dict(headers)
        self.interval = interval

    async def __aiter__(self) -> AsyncIterator[str]:
        async with httpx.AsyncClient(timeout=5, headers=self.headers, trust_env=False) as client:
            while True:
                try:
                    resp: httpx.Response | None = await client.get(self.base_url + "/metrics")
                except httpx.HTTPError:
                    resp = None
                if resp is not None and resp.status_code == 404:
                    return  # no --enable-metrics: logs alone will do
                if resp is not None and resp.status_code == 200:
                    yield resp.text
                await asyncio.sleep(self.interval)

    async def close(self) -> None:
        """Nothing to release: the client lives inside the iteration."""


# -- tees of a session's observers ---------------------------------------------------------


class Tee(Generic[T]):
    """What another observer saw, from the moment the tee was attached until `close()`.
    `first` is handed out before anything fed (the GPU topology the agent sent at its start)."""

    def __init__(self, first: Iterable[T] = ()) -> None:
        self._queue: asyncio.Queue[T | None] = asyncio.Queue()
        for item in first:
            self._queue.put_nowait(item)
        self.closed = False

    def feed(self, item: T) -> None:
        if not self.closed:
            self._queue.put_nowait(item)

    async def __aiter__(self) -> AsyncIterator[T]:
        while (item := await self._queue.get()) is not None:
            yield item

    async def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._queue.put_nowait(None)


class LogTee:
    """The lines another reader followed, since the previous `read_new`. The first read
    returns the log's head from `head` (a one-shot read of the startup lines, which a
    follower that started at the tail never saw) and drops what was fed before it."""

    def __init__(self, head: Callable[[], Awaitable[list[str]]] | None = None) -> None:
        self._head = head
        self._lines: list[str] = []
        self._started = False
        self.closed = False

    def feed(self, lines: Iterable[str]) -> None:
        if self._started and not self.closed:
            self._lines.extend(lines)

    async def read_new(self) -> list[str]:
        if not self._started:
            self._started = True
            if self._head is not None:
                with contextlib.suppress(Exception):
                    return await self._head()
            return []
        lines, self._lines = self._lines, []
        return lines

    async def close(self) -> None:
        self.closed = True
        self._lines = []
