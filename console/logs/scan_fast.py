"""The whole-file scan's inner loop (`plateau logscan`): the bulk of a log without events.

Most lines of a serving log are standard `Decode batch` / `Prefill batch` lines and uvicorn
access lines. A chunk of text is read with one regex call (scan_rows.ROWS: a tuple per line),
and the scanner walks the standard lines' tuples itself (LogScanner.standard_rows): no Python
call, no cleaning, no LogEvent per line. Every other line takes the assembler's general path,
so the result is the one feeding every line through EventAssembler.feed gives
(tests/test_logs_scan_fastpath.py compares them):

* a standard line closes whatever event was open, like any prefixed line;
* a line that may continue the standard line before it (indented, a `Traceback`, or text the
  assembler cleans first) takes that line with it to the general path, where the assembler
  decides; so does a chunk's last line when standard (the next chunk may continue it);
* a standard line is clean by construction: printable ASCII, nothing redact_secrets changes
  (scan_rows.py says why).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import itemgetter

from console.logs.assembler import EventAssembler
from console.logs.scan import LogScanner, ScanReport
from console.logs.scan_rows import RAW, ROWS, TS, Row
from console.sglang.crash import TRACEBACK

_stamps = itemgetter(TS)  # "" on the rows of lines the regex did not read
_MAY_CONTINUE = (" ", "\t", TRACEBACK)


class ScanPipeline:
    """Feed a file's text in order (`feed_text`, chunks of whole lines), then `finish()`."""

    def __init__(self, scanner: LogScanner, assembler: EventAssembler,
                 rows_sink: Callable[[Sequence[Row]], None] | None = None) -> None:
        self.scanner = scanner
        self.assembler = assembler
        self.rows_sink = rows_sink
        """Also given every line's row, in order (the ladder reads them: one regex pass)."""
        self._held = ""  # the previous chunk's last line, when standard
        self._seq = assembler.next_seq  # the line number of the next row

    def feed_text(self, text: str) -> None:
        """`text`: whole lines, each ending in `\\n`, none longer than MAX_LINE_CHARS (what
        bounded_lines.bounded_text_chunks gives); a last line without one gets one."""
        if text and not text.endswith("\n"):
            text += "\n"  # ROWS reads a line up to its newline
        if self._held:
            text = self._held + text
            self._held = ""
        rows = ROWS.findall(text)
        count = len(rows)
        if count and rows[-1][TS]:
            self._held = text[text.rfind("\n", 0, len(text) - 1) + 1 :]
            count -= 1
        if self.rows_sink is not None:
            self.rows_sink(rows[:count] if count < len(rows) else rows)
        self._rows(rows, count, text)

    def finish(self) -> ScanReport:
        if self._held:
            text, self._held = self._held, ""
            rows = ROWS.findall(text)
            if self.rows_sink is not None:
                self.rows_sink(rows)
            self._rows(rows, len(rows), text)
        last = self.assembler.flush()
        if last is not None:
            self.scanner.feed((last,))
        return self.scanner.report()

    def _rows(self, rows: list[Row], count: int, text: str) -> None:
        """The first `count` rows of `text`, in order."""
        scanner = self.scanner
        stamps = list(map(_stamps, rows))
        lines: list[str] | None = None  # `text`'s lines, split when a standard one goes general
        first = self._seq
        index = 0
        while index < count:
            try:
                other = stamps.index("", index, count)
            except ValueError:
                other = count
            end = other
            if index < other < count and _may_continue(rows[other][RAW]):
                end = other - 1  # the assembler decides whether the line goes with the next
            while index < end:
                if self.assembler.has_open:
                    self._close_open()
                index = scanner.standard_rows(rows, index, end, first + index)
                if index < end:  # a standard line the scanner takes as an event
                    if lines is None:
                        lines = text.split("\n")
                    self._general(lines[index], first + index)
                    index += 1
            for general in range(index, min(other + 1, count)):
                if stamps[general]:
                    if lines is None:
                        lines = text.split("\n")
                    self._general(lines[general], first + general)
                else:
                    self._general(rows[general][RAW], first + general)
            index = other + 1
        self._seq = first + count

    def _general(self, raw: str, seq: int) -> None:
        assembler = self.assembler
        assembler.next_seq = seq
        event = assembler.feed(raw)
        if event is not None:
            self.scanner.feed((event,))

    def _close_open(self) -> None:
        done = self.assembler.flush()
        if done is not None:
            self.scanner.feed((done,))


def _may_continue(raw: str) -> bool:
    """Whether the assembler might add this unprefixed line to a batch or access event before
    it (indented lines, a traceback), or cleans it first (so its start may change)."""
    return raw.startswith(_MAY_CONTINUE) or not raw.isprintable()
