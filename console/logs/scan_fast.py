"""The whole-file scan's inner loop (`plateau logscan`): the bulk of a log without events.

Most lines of a serving log are standard `Decode batch` / `Prefill batch` lines and uvicorn
access lines. For those, one regex match over the whole line reads the prefix and every field
the scan needs, and the scanner takes the values directly (LogScanner.batch_line/access_line):
no cleaning, no LogEvent, no second parse. Everything else takes the assembler's general path
line by line, so the result is the one feeding every line through EventAssembler.feed gives
(tests/test_logs_scan_fastpath.py compares them):

* a standard line closes whatever event was open, like any prefixed line;
* it stays pending until the next line: if that line continues it (an indented line, say),
  the pending line becomes the assembler's open event (`adopt`) and the general path goes on;
* a line the regex matches is clean by construction for batch lines (printable ASCII digits
  and fixed words, no secret-like text); access lines (free-form client and path) are checked
  as the assembler checks them, and take the general path when in doubt.
"""

from __future__ import annotations

import re

from console.logs.assembler import EventAssembler
from console.logs.batch_stats import DECODE_FAST, PREFILL_FAST
from console.logs.classify import access_severity
from console.logs.line_format import ACCESS, MAX_LINE_CHARS, PREFIX
from console.logs.models import LogEvent, Severity, new_event
from console.logs.scan import LogScanner, ScanReport

_ACCESS_HEAD = "INFO:     "


def _body(pattern: re.Pattern[str]) -> str:
    return pattern.pattern.removesuffix(r"\Z").removesuffix("$")


# Group numbers: PREFIX's two (timestamp, ranks), then each alternative's outer group followed
# by its own groups; `lastindex` is the outer group of the alternative that matched.
_DECODE = PREFIX.groups + 1
_PREFILL = _DECODE + 1 + DECODE_FAST.groups
_ACCESS = _PREFILL + 1 + PREFILL_FAST.groups
_STANDARD = re.compile(
    f"{PREFIX.pattern}(?:({_body(DECODE_FAST)})|({_body(PREFILL_FAST)})"
    f"|({re.escape(_ACCESS_HEAD)}{_body(ACCESS)}))\\Z",
    re.ASCII,
)
_D_RUN, _D_USE, _D_ALEN, _D_GRAPH, _D_GEN, _D_QUEUE = (_DECODE + i for i in (2, 4, 5, 7, 8, 9))
_P_USE, _P_RUN, _P_QUEUE, _P_GRAPH, _P_INPUT = (_PREFILL + i for i in (5, 6, 7, 9, 10))
_A_METHOD, _A_PATH, _A_STATUS = (_ACCESS + i for i in (2, 3, 4))
_DEBUG = Severity.DEBUG


class ScanPipeline:
    """Feed a file's lines in order (lists of any size), then `finish()` for the report."""

    def __init__(self, scanner: LogScanner, assembler: EventAssembler) -> None:
        self.scanner = scanner
        self.assembler = assembler
        self._pending: re.Match[str] | None = None  # the last line, if standard
        self._pending_seq = 0

    def feed_lines(self, lines: list[str]) -> None:
        assembler, scanner = self.assembler, self.scanner
        match = _STANDARD.match
        pending, pending_seq = self._pending, self._pending_seq
        seq = assembler.next_seq if pending is None else pending_seq + 1
        for raw in lines:
            found = match(raw)
            if found is not None and found.lastindex == _ACCESS and (
                found.group(2) or len(raw) > MAX_LINE_CHARS or not raw.isprintable()
                or "api" in raw or "password" in raw or "hf_token" in raw
            ):
                found = None  # ranks, or text the general path cleans: not the fast shape
            if found is not None:
                if pending is not None:
                    self._commit(pending, pending_seq)
                elif assembler.has_open:
                    done = assembler.flush()
                    if done is not None:
                        scanner.feed((done,))
                pending, pending_seq = found, seq
                seq += 1
                continue
            if pending is not None:
                assembler.adopt(self._event(pending, pending_seq))
                pending = None
            assembler.next_seq = seq
            event = assembler.feed(raw)
            seq += 1
            if event is not None:
                scanner.feed((event,))
        self._pending, self._pending_seq = pending, pending_seq
        if pending is None:
            assembler.next_seq = seq

    def finish(self) -> ScanReport:
        if self._pending is not None:
            self._commit(self._pending, self._pending_seq)
            self._pending = None
        last = self.assembler.flush()
        if last is not None:
            self.scanner.feed((last,))
        return self.scanner.report()

    def _commit(self, found: re.Match[str], seq: int) -> None:
        kind = found.lastindex
        if kind == _DECODE:
            run, use, alen, graph, gen, queue = found.group(
                _D_RUN, _D_USE, _D_ALEN, _D_GRAPH, _D_GEN, _D_QUEUE)
            self.scanner.batch_line(
                (True, int(run), int(queue), float(use), graph == "True", float(gen),
                 None if alen is None else float(alen)), seq, found.group(1))
        elif kind == _PREFILL:
            use, run, queue, graph, rate = found.group(_P_USE, _P_RUN, _P_QUEUE, _P_GRAPH,
                                                       _P_INPUT)
            self.scanner.batch_line(
                (False, int(run), int(queue), float(use), graph == "True", float(rate), None),
                seq, found.group(1))
        elif not self.scanner.access_line(_access_severity(found)):
            self.scanner.feed((self._event(found, seq),))

    def _event(self, found: re.Match[str], seq: int) -> LogEvent:
        """The event the assembler builds for this line (feed_lines' fast heads)."""
        raw = found.string
        source = self.assembler.source
        if found.lastindex == _ACCESS:
            return new_event(seq, "access", (raw,), raw[found.start(_ACCESS) + len(_ACCESS_HEAD):],
                             _access_severity(found), found.group(1), "", "INFO", None, None,
                             None, source)
        message = raw[found.start(found.lastindex or 0):]
        return new_event(seq, "sglang", (raw,), message, _DEBUG, found.group(1),
                         found.group(2)[1:], None, None, None, None, source)


def _access_severity(found: re.Match[str]) -> Severity:
    status = found.group(_A_STATUS)
    if status < "400":
        return _DEBUG
    return access_severity(int(status), found.group(_A_METHOD), found.group(_A_PATH))
