"""Follow a log file on a host over any Transport, with `tail -F` semantics and exact resume.

A small stdlib-only follower (remote_follow.py) runs on the host through
`transport.stream_lines(["python3", PATH, ...])` (PATH: `transport.install_program`'s
verified copy in the run dir) and prints every complete line with its
byte offsets. The console remembers (real path, dev:inode, end offset of the last complete line);
after a dropped connection it restarts the follower with that triple, so the host resumes at
the exact byte: no line is duplicated and none is lost, even if the file was rotated or the
server area swapped `current.log` to a new launch's file meanwhile.

Output is typed: `FollowBatch`es of parsed `LogEvent`s plus `FollowerNotice`s (start, rotation,
switch, truncation, connection lost, reconnecting, resumed), batched every `batch_interval`.

Throughput: the host sends the lines of each read as one `B` record, parsed here with one
`feed_lines` call. Memory: at most `max_pending_events` parsed events (plus one record, at most
remote_follow.MAX_RECORD bytes of log) wait for the consumer; past that the reader stops
reading and the host follower blocks on its pipe (backpressure, no line lost).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from console import aio
from console.host.transport import LineStream, Transport
from console.logs import remote_follow
from console.logs.assembler import EventAssembler
from console.logs.catalogue import Catalogue
from console.logs.models import FollowerNotice, LogEvent

FOLLOWER_SOURCE = Path(remote_follow.__file__).read_text("utf-8")
DEFAULT_BACKOFF = (0.5, 1.0, 2.0, 4.0, 8.0, 15.0)


@dataclass(frozen=True, slots=True)
class FollowPosition:
    """Where the next unread byte is: in file `file_id` (dev:inode), last seen at `path`."""

    path: str
    file_id: str
    offset: int


@dataclass(frozen=True, slots=True)
class FollowBatch:
    events: tuple[LogEvent, ...]
    notices: tuple[FollowerNotice, ...]
    position: FollowPosition | None


class LogFollower:
    """`async for batch in LogFollower(transport, path): ...`; `await close()` to stop."""

    def __init__(
        self,
        transport: Transport,
        path: str,
        *,
        start_lines: int = 500,
        catalogue: Catalogue | None = None,
        batch_interval: float = 0.15,
        idle_flush: float = 0.3,
        max_batch_events: int = 5000,
        max_pending_events: int = 20_000,
        backoff: Sequence[float] = DEFAULT_BACKOFF,
        python: str = "python3",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.transport = transport
        self.path = path
        self.start_lines = start_lines
        self.batch_interval = batch_interval
        self.idle_flush = idle_flush
        self.max_batch_events = max_batch_events
        self.max_pending_events = max(max_pending_events, 1)
        self.backoff = tuple(backoff) or DEFAULT_BACKOFF
        self.python = python
        self._clock = clock
        self.assembler = EventAssembler(catalogue)
        self.position: FollowPosition | None = None
        self.remote_pid: int | None = None
        self.lines_received = 0
        self.connects = 0
        self._events: list[LogEvent] = []
        self._notices: list[FollowerNotice] = []
        self._first_pending_at = 0.0
        self._last_line_at = 0.0
        self._wake = asyncio.Event()
        self._drained = asyncio.Event()
        self._closing = False
        self._done = False
        self._task: asyncio.Task[None] | None = None
        self._stream: LineStream | None = None

    # -- public ---------------------------------------------------------------------------

    def __aiter__(self) -> AsyncIterator[FollowBatch]:
        return self.batches()

    async def batches(self) -> AsyncIterator[FollowBatch]:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"follow {self.path}")
        while True:
            quiet = False  # the stream went quiet: deliver now, nothing more to coalesce
            if not self._events and not self._notices:
                if self._done:
                    return
                timeout = self.idle_flush
                if self.assembler.has_open:  # wake exactly when the open event is due
                    timeout = max(0.01, self._last_line_at + self.idle_flush - self._clock())
                if not await aio.wait_event(self._wake, timeout):
                    self._flush_if_idle()
                    if not self._events and not self._notices:
                        continue
                    quiet = True
            self._wake.clear()
            remaining = self.batch_interval - (self._clock() - self._first_pending_at)
            if (remaining > 0 and not quiet and len(self._events) < self.max_batch_events
                    and not self._done):
                await asyncio.sleep(remaining)
            events, self._events = self._events, []
            notices, self._notices = self._notices, []
            self._drained.set()
            yield FollowBatch(tuple(events), tuple(notices), self.position)

    async def close(self) -> None:
        self._closing = True
        stream = self._stream
        if stream is not None:
            with contextlib.suppress(Exception):
                await stream.close()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        self._done = True
        self._wake.set()

    def argv(self, program: str) -> list[str]:
        """The host command: PROGRAM is the installed copy of remote_follow.py."""
        argv = [self.python, program, self.path, str(self.start_lines)]
        if self.position is not None:
            argv += [self.position.path, self.position.file_id, str(self.position.offset)]
        return argv

    # -- producer -------------------------------------------------------------------------

    async def _run(self) -> None:
        failures = 0
        try:
            while not self._closing:
                detail = ""
                got_header = False
                try:
                    # `~` means the host's home, resolved there (the follower opens it as is)
                    self.path = await self.transport.resolve_path(self.path)
                    program = await self.transport.install_program(
                        "plateau-follow", FOLLOWER_SOURCE
                    )
                    stream = await self.transport.stream_lines(self.argv(program))
                    self._stream = stream
                    async with stream:
                        async for record in stream:
                            if self._handle(record):
                                got_header = True
                                failures = 0
                            if len(self._events) >= self.max_pending_events:
                                # Backpressure: the consumer is behind. Stop reading until it
                                # takes a batch; the host follower blocks on its pipe and
                                # resumes at the same byte, so memory stays bounded and no
                                # line is lost.
                                self._drained.clear()
                                await self._drained.wait()
                    if not self._closing:
                        detail = f"follower exited (status {stream.exit_status})"
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # any transport failure: report, back off, retry
                    detail = f"{type(exc).__name__}: {exc}"
                finally:
                    self._stream = None
                if self._closing:
                    break
                if not got_header and self.connects == 0 and "status 127" in detail:
                    detail += f" ({self.python} not found on {self.transport.host_name}?)"
                self._notice("lost", detail)
                delay = self.backoff[min(failures, len(self.backoff) - 1)]
                failures += 1
                self._notice("reconnecting", f"retry {failures} in {delay:g} s")
                await asyncio.sleep(delay)
        finally:
            last = self.assembler.flush()
            if last is not None:
                self._push_event(last)
            self._done = True
            self._wake.set()

    def _handle(self, record: str) -> bool:
        """Apply one follower record; True for a file header (the follower is working)."""
        tag, _, rest = record.partition(" ")
        if tag == "B":
            start_text, lengths, payload = rest.split(" ", 2)
            texts = json.loads(payload)
            offsets = []
            offset = int(start_text)
            for length in lengths.split(","):
                offsets.append(offset)
                offset += int(length) + 1
            if len(offsets) != len(texts):
                raise ValueError(f"follower record: {len(offsets)} offsets, {len(texts)} lines")
            self.lines_received += len(texts)
            self._last_line_at = self._clock()
            position = self.position
            if position is not None:
                self.position = FollowPosition(position.path, position.file_id, offset)
            events = self.assembler.feed_lines(texts, offsets)
            if events:
                if not self._events and not self._notices:
                    self._first_pending_at = self._clock()
                self._events.extend(events)
                self._wake.set()
            return False
        if tag == "L":
            start, end, payload = rest.split(" ", 2)
            text = json.loads(payload)
            self.lines_received += 1
            self._last_line_at = self._clock()
            position = self.position
            if position is not None:
                self.position = FollowPosition(position.path, position.file_id, int(end))
            event = self.assembler.feed(text, int(start))
            if event is not None:
                self._push_event(event)
            return False
        if tag == "F":
            file_id, at, payload = rest.split(" ", 2)
            real = json.loads(payload)
            resumed = self.position is not None and self.position.file_id == file_id
            self.position = FollowPosition(real, file_id, int(at))
            self.assembler.source = real
            self.connects += 1
            kind = "resumed" if resumed else "started"
            self._notice(kind, f"{real} at byte {at}", path=real, offset=int(at))
            return True
        if tag == "N":
            kind, _, payload = rest.partition(" ")
            detail = json.loads(payload) if payload else ""
            if kind in ("rotated", "switched", "truncated"):
                last = self.assembler.flush()  # the old file's last event is complete
                if last is not None:
                    self._push_event(last)
            known = ("rotated", "switched", "truncated", "gap", "waiting")
            self._notice(kind if kind in known else "error", str(detail), path=str(detail))
            return False
        if tag == "P":
            self.remote_pid = int(rest)
            return False
        if tag == "H":
            return False
        self._notice("error", f"unexpected follower output: {record[:200]!r}")
        return False

    # -- buffering ------------------------------------------------------------------------

    def _push_event(self, event: LogEvent) -> None:
        if not self._events and not self._notices:
            self._first_pending_at = self._clock()
        self._events.append(event)
        self._wake.set()

    def _notice(self, kind: str, detail: str, *, path: str = "", offset: int = 0) -> None:
        if not self._events and not self._notices:
            self._first_pending_at = self._clock()
        notice = FollowerNotice(kind=kind, detail=detail, path=path or self.path, offset=offset)  # type: ignore[arg-type]
        self._notices.append(notice)
        self._wake.set()

    def _flush_if_idle(self) -> None:
        if self.assembler.has_open and self._clock() - self._last_line_at >= self.idle_flush:
            last = self.assembler.flush()
            if last is not None:
                self._push_event(last)
