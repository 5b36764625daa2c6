"""Following a log through real transports (local subprocess and a real sshd on loopback):
start from the last N lines, rotation, a new per-launch file behind a symlink, a dropped
connection: every line exactly once, in order."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from console import aio
from console.host.local import LocalTransport
from console.host.ssh import SshTransport
from console.host.transport import Transport
from console.logs import remote_follow
from console.logs.follower import LogFollower
from console.logs.models import FollowerNotice, LogEvent

pytestmark = pytest.mark.sshd


def write(path: Path, start: int, stop: int) -> None:
    with path.open("a", encoding="utf-8") as handle:
        for n in range(start, stop):
            handle.write(f"[2026-02-19 05:21:47 TP0] line {n}\n")


class Collector:
    def __init__(self, follower: LogFollower) -> None:
        self.follower = follower
        self.numbers: list[int] = []
        self.notices: list[FollowerNotice] = []

    async def until(self, done: Callable[[list[int]], bool], timeout: float = 20.0) -> None:
        async def run() -> None:
            if done(self.numbers):
                return
            async for batch in self.follower:
                self.notices.extend(batch.notices)
                for event in batch.events:
                    self.numbers.extend(int(line.rsplit(" ", 1)[1]) for line in event.lines)
                if done(self.numbers):
                    return

        await aio.wait_for(run(), timeout)

    def kinds(self) -> list[str]:
        return [n.kind for n in self.notices]


def ends_with(last: int) -> Callable[[list[int]], bool]:
    return lambda numbers: numbers[-1:] == [last]


def follower_for(transport: Transport, path: Path, start_lines: int = 5) -> LogFollower:
    return LogFollower(transport, str(path), start_lines=start_lines, batch_interval=0.05,
                       idle_flush=0.1, backoff=(0.2, 0.5))


async def test_tail_from_last_lines_then_rotation(
    any_transport: LocalTransport | SshTransport, tmp_path: Path
) -> None:
    log = tmp_path / "server.log"
    write(log, 0, 20)
    follower = follower_for(any_transport, log)
    got = Collector(follower)
    try:
        await got.until(lambda n: len(n) >= 5)
        assert got.numbers == [15, 16, 17, 18, 19]
        write(log, 20, 40)
        await got.until(lambda n: n[-1] == 39)
        # Rotation: rename away, a new file appears; lines written just before are not lost.
        write(log, 40, 45)
        os.rename(log, tmp_path / "server.log.1")
        write(log, 45, 60)
        await got.until(lambda n: n[-1] == 59)
        assert got.numbers == list(range(15, 60))
        assert "rotated" in got.kinds()
    finally:
        await follower.close()


async def test_new_launch_file_behind_symlink(
    any_transport: LocalTransport | SshTransport, tmp_path: Path
) -> None:
    first, second = tmp_path / "launch-1.log", tmp_path / "launch-2.log"
    current = tmp_path / "current.log"
    write(first, 0, 3)
    current.symlink_to(first.name)
    follower = follower_for(any_transport, current, start_lines=100)
    got = Collector(follower)
    try:
        await got.until(lambda n: n[-1:] == [2])
        write(first, 3, 6)  # the old launch's last words
        write(second, 6, 10)
        swap = tmp_path / "current.tmp"
        swap.symlink_to(second.name)
        os.replace(swap, current)  # how the server area swaps launches: atomically
        write(second, 10, 12)
        await got.until(lambda n: n[-1:] == [11])
        assert got.numbers == list(range(12))
        assert "switched" in got.kinds()
        events_source = follower.position
        assert events_source is not None and events_source.path.endswith("launch-2.log")
    finally:
        await follower.close()


async def test_dropped_connection_no_dup_no_gap(
    any_transport: LocalTransport | SshTransport, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    log = tmp_path / "server.log"
    write(log, 0, 10)
    follower = follower_for(any_transport, log, start_lines=10)
    got = Collector(follower)
    try:
        await got.until(lambda n: n[-1:] == [9])
        for round_ in range(2):
            base = 10 + round_ * 30
            write(log, base, base + 10)
            await got.until(ends_with(base + 9))
            if isinstance(any_transport, LocalTransport):
                assert follower.remote_pid is not None
                os.kill(follower.remote_pid, signal.SIGKILL)
            else:
                assert request.getfixturevalue("sshd").drop_connections() >= 1
            write(log, base + 10, base + 20)  # written while nobody is reading
            await asyncio.sleep(0.3)
            write(log, base + 20, base + 30)
            await got.until(ends_with(base + 29))
        assert got.numbers == list(range(70))
        kinds = got.kinds()
        assert kinds.count("lost") >= 2 and kinds.count("resumed") >= 2
        assert "reconnecting" in kinds
    finally:
        await follower.close()


async def test_partial_line_waits_for_newline_and_truncation_is_reported(
    local_transport: LocalTransport, tmp_path: Path
) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(b"[2026-02-19 05:21:47] line 0\n[2026-02-19 05:21:47] line ")
    follower = follower_for(local_transport, log, start_lines=10)
    got = Collector(follower)
    try:
        await got.until(lambda n: n == [0])
        await asyncio.sleep(0.3)
        assert got.numbers == [0]  # half a line is not a line yet
        with log.open("ab") as handle:
            handle.write(b"1\n")
        await got.until(lambda n: n == [0, 1])
        log.write_bytes(b"[2026-02-19 05:21:47] line 2\n")  # truncated in place
        await got.until(lambda n: n == [0, 1, 2])
        assert "truncated" in got.kinds()
    finally:
        await follower.close()


async def test_hostile_bytes_survive_the_wire(local_transport: LocalTransport,
                                              tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    first_line = b"[2026-02-19 05:21:47] a\xff\xfe \x1b]0;T\x07 \x00 [bold]x\r\n"
    log.write_bytes(first_line + b"[2026-02-19 05:21:47] " + b"y" * (1 << 20) + b"\n")
    follower = follower_for(local_transport, log, start_lines=10)
    events: list[LogEvent] = []
    try:
        async def run() -> None:
            async for batch in follower:
                events.extend(batch.events)
                if len(events) >= 2:
                    return
        await aio.wait_for(run(), 20)
    finally:
        await follower.close()
    first, second = events
    assert first.message == "a\ufffd\ufffd  \u2400 [bold]x"
    assert len(second.message) == 1 << 20
    assert (first.offset, second.offset) == (0, len(first_line))  # byte offsets, not chars


async def test_batched_records_keep_exact_byte_offsets(
    any_transport: LocalTransport | SshTransport, tmp_path: Path
) -> None:
    """Many lines per record (B records, split at MAX_RECORD): every line once, in order,
    with the byte offset it has in the file, whatever multi-byte or invalid bytes precede it."""
    log = tmp_path / "server.log"
    lines = [f"[2026-02-19 05:21:47 TP0] line {n} {'é' * (n % 5)}{'x' * (n % 700)}".encode()
             + (b"\xff\xfe" if n % 97 == 0 else b"") for n in range(3000)]
    log.write_bytes(b"".join(line + b"\n" for line in lines))
    expected, offset = [], 0
    for line in lines:
        expected.append(offset)
        offset += len(line) + 1
    follower = follower_for(any_transport, log, start_lines=len(lines))
    events: list[LogEvent] = []
    try:
        async def run() -> None:
            async for batch in follower:
                events.extend(batch.events)
                if len(events) >= len(lines):
                    return
        await aio.wait_for(run(), 30)
    finally:
        await follower.close()
    assert [e.offset for e in events] == expected
    assert [int(e.message.split()[1]) for e in events] == list(range(len(lines)))
    assert "\ufffd\ufffd" in events[97].message
    assert follower.position is not None and follower.position.offset == offset
    assert follower.lines_received == len(lines)


async def test_backpressure_bounds_pending_events(local_transport: LocalTransport,
                                                  tmp_path: Path) -> None:
    """A consumer that stops taking batches stops the reading: pending events stay bounded
    (one record over the cap at most), and nothing is lost once it reads again."""
    log = tmp_path / "server.log"
    write(log, 0, 40_000)
    follower = LogFollower(local_transport, str(log), start_lines=40_000, batch_interval=0.05,
                           max_batch_events=500, max_pending_events=2000)
    numbers: list[int] = []
    batches = follower.batches()
    try:
        first = await aio.wait_for(anext(batches), 20)
        numbers.extend(int(e.message.rsplit(" ", 1)[1]) for e in first.events)
        await asyncio.sleep(1.0)  # not consuming: the reader must stop
        pending = len(follower._events)
        # The cap plus at most one record (MAX_RECORD bytes of ~35-byte lines).
        assert 0 < pending < 2000 + remote_follow.MAX_RECORD // 30
        assert follower.lines_received < 40_000 - 10_000
        while len(numbers) < 40_000:
            batch = await aio.wait_for(anext(batches), 20)
            numbers.extend(int(e.message.rsplit(" ", 1)[1]) for e in batch.events)
    finally:
        await follower.close()
    assert numbers == list(range(40_000))
