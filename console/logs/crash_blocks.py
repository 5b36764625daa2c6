"""The lines around a log's crash hints, kept while a fast whole-log reader (`plateau diagnose
--log`, console/diagnose/from_log.py) skips the rest, then read by the assembler and the
crash watch (crash_finding.py) exactly as `plateau logscan` reads every line: both name the
same crash at the same line.

A block starts at a line with a crash hint, with the BEFORE_LINES lines before it (the line
that announced a traceback, `Exception in ControllerSingle:`; the first part of a chained
traceback whose header the excerpt lost), and takes the BLOCK_LINES lines after it, which hold
the traceback's frames and its exception line, up to the next standard batch line (a prefixed
line: the assembler ends any traceback there too). Memory is bounded: MAX_BLOCKS blocks (the first
ones and the last ones: an OOM early, the exception that ended the log late).
"""

from __future__ import annotations

from collections import deque

from console.logs.assembler import EventAssembler
from console.logs.catalogue import default_catalogue
from console.logs.crash_finding import CRASH_IDS, LOOSE_LINES, CrashFinding, CrashWatch
from console.logs.prefilter import compile_literals
from console.sglang.crash import CPP_TERMINATE, NCCL_NEEDLES, OOM_NEEDLES, TRACEBACK

BLOCK_LINES = 200
BEFORE_LINES = LOOSE_LINES
MAX_BLOCKS = 16


def _needles() -> tuple[str, ...]:
    catalogue = default_catalogue()
    literals = [literal for ident in sorted(CRASH_IDS) if ident in catalogue.by_id
                for literal in catalogue.by_id[ident].literals]
    return tuple(dict.fromkeys((TRACEBACK, CPP_TERMINATE, *OOM_NEEDLES, *NCCL_NEEDLES,
                                *literals)))


CRASH_NEEDLES = _needles()
"""Substrings of every line that can start a crash (a superset: the watch decides)."""
_HINT = compile_literals(CRASH_NEEDLES)

Block = list[tuple[int, str]]


class CrashBlocks:
    def __init__(self) -> None:
        self.before: deque[tuple[int, str]] = deque(maxlen=BEFORE_LINES)
        """The last lines read outside a block, with their 1-based numbers (the reader
        appends every line but standard batch lines)."""
        self._open: Block = []
        self.open = False
        """A block is taking lines (a plain attribute: the reader asks it for every line)."""
        self._first: list[Block] = []
        self._last: deque[Block] = deque(maxlen=MAX_BLOCKS // 2)

    @staticmethod
    def hint(line: str) -> bool:
        return _HINT is not None and _HINT.search(line) is not None

    def start(self, number: int, line: str) -> None:
        block: Block = []
        expected = number - 1
        for before, text in reversed(self.before):  # the run of lines just before this one
            if before != expected:
                break
            block.append((before, text))
            expected -= 1
        block.reverse()
        block.append((number, line))
        self._open, self.open = block, True
        if len(self._first) < MAX_BLOCKS // 2:
            self._first.append(block)
        else:
            self._last.append(block)

    def add(self, number: int, line: str) -> None:
        block = self._open
        block.append((number, line))
        if len(block) >= BLOCK_LINES:
            self.open = False

    def close(self) -> None:
        """End the open block (a standard batch line came: no traceback continues past it)."""
        self.open = False

    def finding(self) -> CrashFinding | None:
        """The crash these blocks show, as logscan's CrashWatch reads it."""
        watch = CrashWatch()
        if not self._first:
            return None
        assembler = EventAssembler()  # one for all blocks: building one compiles its prefilter
        for block in (*self._first, *self._last):
            for number, line in block:
                assembler.next_seq = number - 1
                done = assembler.feed(line)
                if done is not None:
                    watch.feed((done,))
            last = assembler.flush()
            if last is not None:
                watch.feed((last,))
        return watch.finding
