"""Lines of a byte stream in bounded memory, whatever the line length.

`for raw in handle` holds a whole line in memory: a 2 GB log with no newline (or `/dev/zero`)
grew the process to gigabytes before MemoryError. Here a line longer than `max_bytes` is cut
like the live follower cuts it (line_format.clean_line): its first `max_bytes` are kept, the
rest is counted and dropped, and a marker says how much went.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, cast

from console.logs.line_format import MAX_LINE_CHARS

CHUNK_BYTES = 1 << 16
BATCH_BYTES = 1 << 18
MAX_LINE_BYTES = MAX_LINE_CHARS - 64
"""Room for the marker: the line stays within MAX_LINE_CHARS, so clean_line does not cut it
again."""


def bounded_lines(
    handle: IO[bytes], *, max_bytes: int = MAX_LINE_BYTES, chunk_bytes: int = CHUNK_BYTES
) -> Iterator[str]:
    """Decoded lines (no trailing newline) of `handle`; memory stays O(max_bytes + chunk)."""
    kept = bytearray()
    dropped = 0
    while True:
        chunk = handle.read(chunk_bytes)
        if not chunk:
            break
        start = 0
        while start < len(chunk):
            newline = chunk.find(b"\n", start)
            end = len(chunk) if newline < 0 else newline
            room = max_bytes - len(kept)
            piece = end - start
            if piece <= room:
                kept += chunk[start:end]
            else:
                kept += chunk[start : start + max(room, 0)]
                dropped += piece - max(room, 0)
            if newline < 0:
                break
            yield _finish(kept, dropped)
            kept.clear()
            dropped = 0
            start = newline + 1
    if kept or dropped:
        yield _finish(kept, dropped)


def _finish(kept: bytearray, dropped: int) -> str:
    text = kept.decode("utf-8", errors="replace")
    if dropped:
        text += f"… [{dropped} more bytes dropped]"  # as the follower marks a cut line
    return text


def bounded_text_chunks(
    handle: IO[bytes], *, max_bytes: int = MAX_LINE_BYTES, chunk_bytes: int = BATCH_BYTES
) -> Iterator[str]:
    """The lines of `bounded_lines(handle)`, the same strings, as text: each chunk read is
    its complete lines, each ending in `\n` (a last line without one gets one).

    A chunk's complete lines are decoded in one call: a whole-log reader (`logscan`) then
    reads them with one regex call per chunk (scan_fast.py) instead of cutting, decoding and
    matching line by line. Decoding many lines at once gives the per-line decode's result
    because `\n` is never part of a multi-byte sequence. While a buffer is short enough that
    no line in it can exceed `max_bytes` this path holds; a longer one (a giant line) hands
    the rest of the stream, buffer first, to `bounded_lines`, which cuts it.
    """
    carry = b""
    while True:
        chunk = handle.read(chunk_bytes)
        if not chunk:
            break
        buffer = carry + chunk if carry else chunk
        if len(buffer) > max_bytes:
            rest = cast(IO[bytes], _Prepended(buffer, handle))
            yield from _joined(bounded_lines(rest, max_bytes=max_bytes), chunk_bytes)
            return
        end = buffer.rfind(b"\n")
        if end < 0:
            carry = buffer
            continue
        carry = buffer[end + 1 :]
        yield buffer[: end + 1].decode("utf-8", errors="replace")
    if carry:
        yield carry.decode("utf-8", errors="replace") + "\n"


def _joined(lines: Iterator[str], chunk_chars: int) -> Iterator[str]:
    """`lines` as text chunks of about `chunk_chars` (one line more at most); holds no line
    but in the chunk it yields (these lines may be MAX_LINE_BYTES each)."""
    group: list[str] = []
    size = 0
    for line in lines:
        group.append(line)
        size += len(line) + 1
        del line
        if size >= chunk_chars:
            yield _take(group)
            size = 0
    if group:
        yield _take(group)


def _take(group: list[str]) -> str:
    """The lines of `group`, each ending in a newline, as one text; empties `group`."""
    group.append("")
    text = "\n".join(group)
    group.clear()
    return text


class _Prepended:
    """A reader that returns `first`, then what `handle` reads (the hand-over above)."""

    def __init__(self, first: bytes, handle: IO[bytes]) -> None:
        self._first: bytes | None = first
        self._handle = handle

    def read(self, size: int = -1) -> bytes:
        if self._first is not None:
            first, self._first = self._first, None
            return first
        return self._handle.read(size)
