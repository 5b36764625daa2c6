"""Files the operator names on the command line (`diagnose --log`, `diagnose --bench`,
`sweep --trace`), read within bounds: a file we did not write may be anything.

Each is opened without blocking (a fifo would wait forever for a writer) and must be a regular
file (not a fifo, a device such as /dev/zero, a socket or a directory); its size must be
within the kind's limit before a byte is read (a 10 GB sparse file is refused at once, not
read for minutes), and no more than that is read if it grows meanwhile. Text is read in
pieces cut at line ends, and a line longer than the kind's limit, or more lines than its
limit, stop the read: memory and time stay bounded by the limits, not by the file. Every
refusal is one line that names the file and the limit (a UsageError: exit 2).
"""

from __future__ import annotations

import codecs
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from console.errors import UsageError, file_as_usage_error

MiB = 1 << 20
GiB = 1 << 30
CHUNK = 8 * MiB


@dataclass(frozen=True)
class Limits:
    """What one kind of input file may hold."""

    what: str  # "server log": how the errors name it
    max_bytes: int
    max_lines: int
    max_line_chars: int


# A real SGLang log is ~200 bytes a line; 512 MiB is days of a busy server, read at a few
# MB/s. Lines: 8 million (a flood of empty lines costs time per line, not per byte).
SERVER_LOG = Limits("server log", 512 * MiB, 8_000_000, 1 * MiB)
# bench_serving's --output-details records hold per-request lists: tens of MB at most.
BENCH_FILE = Limits("bench file", 256 * MiB, 1_000_000, 256 * MiB)
# A Mooncake trace line is one request (~100 bytes); its whole day is ~23,000 lines.
TRACE_FILE = Limits("trace", 64 * MiB, 1_000_000, 1 * MiB)


def _size(count: int) -> str:
    return f"{count / GiB:.1f} GiB" if count >= GiB else f"{count / MiB:.0f} MiB" \
        if count >= MiB else f"{count} bytes"


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a fifo"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def open_input(path: str, prefix: str, limits: Limits) -> BinaryIO:
    """`path` opened for reading: a regular file within `limits.max_bytes`."""
    with file_as_usage_error(prefix):
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = next((name for test, name in _KINDS if test(info.st_mode)), "not a file")
            raise UsageError(f"{prefix}: is {kind}, not a regular file")
        if info.st_size > limits.max_bytes:
            raise UsageError(f"{prefix}: {_size(info.st_size)} is over the "
                             f"{_size(limits.max_bytes)} limit for a {limits.what}")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def read_text(path: str, prefix: str, limits: Limits) -> str:
    """The whole file as text (bad bytes replaced), within the limits."""
    return "".join(text_chunks(path, prefix, limits))


def text_chunks(path: str, prefix: str, limits: Limits, *,
                keep_carriage_returns: bool = False) -> Iterator[str]:
    """The file's text in pieces that end at line ends (`\\r\\n` and `\\r` read as `\\n`,
    bad bytes replaced; a server log keeps its `\\r`s: a tqdm bar's redraws are one line,
    console/logs/line_format.py resolves them). The file is opened (and refused) now, not at
    the first piece."""
    handle = open_input(path, prefix, limits)
    return _pieces(handle, prefix, limits, keep_carriage_returns)


def text_lines(path: str, prefix: str, limits: Limits) -> Iterator[str]:
    """The file's lines, without their line ends, within the limits."""
    chunks = text_chunks(path, prefix, limits)
    return (line for chunk in chunks for line in chunk[:-1].split("\n"))


def _pieces(handle: BinaryIO, prefix: str, limits: Limits,
            keep_carriage_returns: bool = False) -> Iterator[str]:
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    rest = ""
    lines = read = 0
    with handle:
        while True:
            block = handle.read(min(CHUNK, limits.max_bytes + 1 - read))
            read += len(block)
            if read > limits.max_bytes:
                raise UsageError(f"{prefix}: grew past the {_size(limits.max_bytes)} limit "
                                 f"for a {limits.what} while it was read")
            text = rest + decoder.decode(block, final=not block)
            held = ""
            if block and text.endswith("\r") and not keep_carriage_returns:
                text, held = text[:-1], "\r"  # it may start a `\r\n` cut in two
            if "\r" in text and not keep_carriage_returns:
                text = text.replace("\r\n", "\n").replace("\r", "\n")
            cut = text.rfind("\n") + 1
            rest = text[cut:] + held
            lines += text.count("\n", 0, cut)
            _check(prefix, limits, lines, len(rest) if block else 0)
            if cut:
                yield text[:cut]
            if not block:
                break
    if rest:
        yield rest + "\n"


def _check(prefix: str, limits: Limits, lines: int, open_line: int) -> None:
    if lines > limits.max_lines:
        raise UsageError(f"{prefix}: more than {limits.max_lines:,} lines, the limit for a "
                         f"{limits.what} (give its last lines: tail -n)")
    if open_line > limits.max_line_chars:
        raise UsageError(f"{prefix}: line {lines + 1:,} is longer than "
                         f"{_size(limits.max_line_chars)}, the limit for a {limits.what}")
