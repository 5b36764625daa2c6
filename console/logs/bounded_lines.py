"""Lines of a byte stream in bounded memory, whatever the line length.

`for raw in handle` holds a whole line in memory: a 2 GB log with no newline (or `/dev/zero`)
grew the process to gigabytes before MemoryError. Here a line longer than `max_bytes` is cut
like the live follower cuts it (line_format.clean_line): its first `max_bytes` are kept, the
rest is counted and dropped, and a marker says how much went.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO

from console.logs.line_format import MAX_LINE_CHARS

CHUNK_BYTES = 1 << 16
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
