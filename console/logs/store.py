"""A bounded, indexed store of log events for the log view (no Textual here).

Rows are physical lines (a traceback event has several rows); every row has an absolute id
that never changes, so a view can keep its place while old rows fall off the front.
Memory bound: at most `max_lines` rows and `max_chars` characters of line text are retained
(whole events are dropped from the front); plus two list slots per row and three deque slots
per event of index.

Events are kept packed as plain tuples of str/int/None (`_pack`), which Python's cyclic GC
stops tracking after a collection or two (a tuple is untracked once the tuples it holds
are); `row()` rebuilds the LogEvent on demand (only
visible rows are ever asked for). With 50,000 retained lines, each tracked object is one more
thing every full collection walks, on the UI's event loop: keeping the LogEvents themselves
made 70-90 ms pauses every couple of seconds while following a busy log.
"""

from __future__ import annotations

import dataclasses
import re
from bisect import bisect_left
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from console.logs.models import LogEvent, Severity, new_event
from console.logs.own_requests import is_console_probe

Packed = tuple[Any, ...]  # LogEvent's fields in order, severity as a plain int (see _pack)
_SEVERITY = {int(s): s for s in Severity}


def _pack(event: LogEvent) -> Packed:
    return (event.seq, event.kind, event.lines, event.message, int(event.severity),
            event.timestamp, event.ranks, event.level, event.catalogue_id, event.cause_id,
            event.offset, event.source)


def _unpack(packed: Packed) -> LogEvent:
    (seq, kind, lines, message, severity, timestamp, ranks, level, catalogue_id, cause_id,
     offset, source) = packed
    return new_event(seq, kind, lines, message, _SEVERITY[severity], timestamp, ranks, level,
                     catalogue_id, cause_id, offset, source)


@dataclass(frozen=True, slots=True)
class LogFilter:
    """Show only events matching all the given conditions (not just highlight them)."""

    min_severity: Severity | None = None
    ranks: frozenset[str] | None = None
    """Rank labels such as "TP0", "DP1 TP5"; "" selects lines without a rank prefix."""
    pattern: re.Pattern[str] | None = None
    hide_own: bool = False
    """Fold the console's own access lines (`/ready`, `/metrics`... polls) away."""

    @property
    def narrowing(self) -> bool:
        """A filter the operator set (severity, rank, regex), folding aside."""
        return self.min_severity is not None or self.ranks is not None or self.pattern is not None

    @property
    def active(self) -> bool:
        return self.narrowing or self.hide_own

    def replace(self, **changes: object) -> LogFilter:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    def matches(self, event: LogEvent) -> bool:
        return self.matches_fields(event.severity, event.ranks, event.lines, event.kind,
                                   event.message)

    def matches_fields(self, severity: int, ranks: str, lines: tuple[str, ...], kind: str = "",
                       message: str = "") -> bool:
        if self.hide_own and is_console_probe(kind, message):
            return False
        if self.min_severity is not None and severity < self.min_severity:
            return False
        if self.ranks is not None and ranks not in self.ranks:
            return False
        if self.pattern is not None:
            return any(self.pattern.search(line) for line in lines)
        return True

    def describe(self) -> str:
        parts = []
        if self.min_severity is not None:
            parts.append(f"severity>={self.min_severity.label}")
        if self.ranks is not None:
            parts.append("rank=" + ",".join(sorted(r or "main" for r in self.ranks)))
        if self.pattern is not None:
            parts.append(f"/{self.pattern.pattern}/")
        return " ".join(parts) or "none"


class LogStore:
    """Append batches of events; read visible rows by index (through the current filter)."""

    def __init__(self, max_lines: int = 50_000, max_chars: int = 32 << 20) -> None:
        if max_lines < 1 or max_chars < 1:
            raise ValueError("max_lines and max_chars must be positive")
        self.max_lines = max_lines
        self.max_chars = max_chars
        # Per event, in parallel: first row id, the packed event, its characters.
        self._event_first: deque[int] = deque()
        self._event_objs: deque[Packed] = deque()
        self._event_chars: deque[int] = deque()
        # Per row, in parallel: its packed event and the line's index within it.
        self._rows: list[Packed] = []
        self._row_line: list[int] = []
        self._rows_base = 0  # absolute id of _rows[0]
        self._first_live = 0  # absolute id of the oldest retained row
        self._next_id = 0
        self._chars = 0
        self.filter = LogFilter()
        self._view: list[int] | None = None  # absolute row ids when a filter is active
        self._view_start = 0
        self.ranks_seen: set[str] = set()
        self.dropped_lines = 0

    # -- size -------------------------------------------------------------------------------

    @property
    def line_count(self) -> int:
        return self._next_id - self._first_live

    @property
    def char_count(self) -> int:
        return self._chars

    @property
    def visible_count(self) -> int:
        if self._view is None:
            return self.line_count
        return len(self._view) - self._view_start

    # -- writing ----------------------------------------------------------------------------

    def append(self, events: Iterable[LogEvent]) -> int:
        """Add events; returns how many visible rows were added (before any trimming)."""
        added_visible = 0
        view = self._view
        flt = self.filter
        rows, row_line = self._rows, self._row_line
        event_first, event_objs, event_chars = (
            self._event_first, self._event_objs, self._event_chars)
        for event in events:
            first = self._next_id
            lines = event.lines
            count = len(lines)
            packed = _pack(event)
            if count == 1:
                chars = len(lines[0])
                rows.append(packed)
                row_line.append(0)
            else:
                chars = sum(len(line) for line in lines)
                rows.extend([packed] * count)
                row_line.extend(range(count))
            self._next_id = first + count
            event_first.append(first)
            event_objs.append(packed)
            event_chars.append(chars)
            self._chars += chars
            if event.ranks not in self.ranks_seen:
                self.ranks_seen.add(event.ranks)
            if view is None:
                added_visible += count
            elif flt.matches(event):
                view.extend(range(first, first + count))
                added_visible += count
        self._trim()
        return added_visible

    def clear(self) -> None:
        self._event_first.clear()
        self._event_objs.clear()
        self._event_chars.clear()
        self._rows.clear()
        self._row_line.clear()
        self._rows_base = self._first_live = self._next_id
        self._chars = 0
        if self._view is not None:
            self._view = []
            self._view_start = 0

    def _trim(self) -> None:
        event_first, event_objs, event_chars = (
            self._event_first, self._event_objs, self._event_chars)
        while len(event_objs) > 1 and (
            self._next_id - self._first_live > self.max_lines or self._chars > self.max_chars
        ):
            first = event_first.popleft()
            count = len(event_objs.popleft()[2])
            self._first_live = first + count
            self._chars -= event_chars.popleft()
            self.dropped_lines += count
        # Compact the row index once half of it is dead (amortised O(1) per row).
        dead = self._first_live - self._rows_base
        if dead and dead * 2 >= len(self._rows):
            del self._rows[:dead]
            del self._row_line[:dead]
            self._rows_base = self._first_live
        if self._view is not None:
            start = bisect_left(self._view, self._first_live, lo=self._view_start)
            self._view_start = start
            if start and start * 2 >= len(self._view):
                del self._view[:start]
                self._view_start = 0

    # -- filtering --------------------------------------------------------------------------

    def set_filter(self, flt: LogFilter) -> None:
        self.filter = flt
        if not flt.active:
            self._view = None
            self._view_start = 0
            return
        view: list[int] = []
        matches = flt.matches_fields
        for first, packed in zip(self._event_first, self._event_objs, strict=True):
            lines = packed[2]
            if matches(packed[4], packed[6], lines, packed[1], packed[3]):
                view.extend(range(first, first + len(lines)))
        self._view = view
        self._view_start = 0

    # -- reading ----------------------------------------------------------------------------

    def row_id(self, visible_index: int) -> int:
        if self._view is None:
            return self._first_live + visible_index
        return self._view[self._view_start + visible_index]

    def row(self, visible_index: int) -> tuple[LogEvent, int]:
        """(event, line index within the event) of a visible row; IndexError when out of range."""
        if not 0 <= visible_index < self.visible_count:
            raise IndexError(visible_index)
        position = self.row_id(visible_index) - self._rows_base
        return _unpack(self._rows[position]), self._row_line[position]

    def source_line(self, visible_index: int) -> int:
        """The 1-based line number in the log source of a visible row: the one numbering the
        log view says (its status line and its detail pane), whatever is folded or filtered."""
        event, line = self.row(visible_index)
        return event.seq + line + 1

    def line(self, visible_index: int) -> str:
        if not 0 <= visible_index < self.visible_count:
            raise IndexError(visible_index)
        position = self.row_id(visible_index) - self._rows_base
        text: str = self._rows[position][2][self._row_line[position]]
        return text

    def visible_index_of(self, row_id: int) -> int | None:
        """Where an absolute row id is in the current view (None if hidden or dropped)."""
        if row_id < self._first_live or row_id >= self._next_id:
            return None
        if self._view is None:
            return row_id - self._first_live
        pos = bisect_left(self._view, row_id, lo=self._view_start)
        if pos < len(self._view) and self._view[pos] == row_id:
            return pos - self._view_start
        return None

    def search(self, pattern: re.Pattern[str], start: int, *, forward: bool = True) -> int | None:
        """Visible index of the next row (after/before `start`, wrapping) whose line matches."""
        total = self.visible_count
        if total == 0:
            return None
        step = 1 if forward else -1
        for offset in range(1, total + 1):
            index = (start + step * offset) % total
            if pattern.search(self.line(index)):
                return index
        return None
