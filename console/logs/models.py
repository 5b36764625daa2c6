"""Typed log events produced by the parser and consumed by the scanner, follower and widgets.

Frozen slotted dataclasses rather than pydantic models: the parser builds one per log line and
must keep up with hundreds of thousands of lines per second.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import IntEnum
from typing import Literal

from console.fast_objects import fast_constructor
from console.sglang.batch import BATCH_PREFIXES
from console.sglang.prefix import parse_timestamp, rank_parts

__all__ = ["fast_constructor"]  # re-exported: older imports name it here


class Severity(IntEnum):
    """Ordered so `severity >= Severity.WARNING` works as a filter.

    SGLang lines carry no level name, so these are inferred from the text (see classify.py).
    DEBUG is routine high-volume output (batch stats, access lines); NOTABLE is an informational
    line an operator wants to see (readiness, startup timings, catalogue matches of info level).
    """

    DEBUG = 10
    INFO = 20
    NOTABLE = 25
    WARNING = 30
    ERROR = 40

    @property
    def label(self) -> str:
        return _LABELS[self]

    @classmethod
    def parse(cls, name: str) -> Severity:
        try:
            return _BY_NAME[name.strip().lower()]
        except KeyError:
            raise ValueError(
                f"unknown severity {name!r} (expected one of {', '.join(_BY_NAME)})"
            ) from None


_LABELS = {
    Severity.DEBUG: "debug",
    Severity.INFO: "info",
    Severity.NOTABLE: "notable",
    Severity.WARNING: "warn",
    Severity.ERROR: "error",
}
_BY_NAME = {
    "debug": Severity.DEBUG,
    "info": Severity.INFO,
    "notable": Severity.NOTABLE,
    "warn": Severity.WARNING,
    "warning": Severity.WARNING,
    "error": Severity.ERROR,
    "critical": Severity.ERROR,
    "fatal": Severity.ERROR,
}

EventKind = Literal["sglang", "uvicorn", "access", "traceback", "plain"]
"""sglang: `[ts ranks] msg`; uvicorn: `[ts] LEVEL:    msg`; access: a uvicorn access line;
traceback: an unprefixed `Traceback (most recent call last):` block; plain: anything else
(tqdm bars, Python warnings, print output)."""




@dataclass(frozen=True, slots=True)
class LogEvent:
    """One log event: a line, or a multi-line group (a traceback, a message with a hint block).

    `lines[0]` is the whole first line (sanitised), `message` the first line without the
    `[timestamp ranks]` prefix. `seq` is the 0-based line number of the first line in the
    source, so `seq + len(lines)` is the next event's seq.
    """

    seq: int
    kind: EventKind
    lines: tuple[str, ...]
    message: str
    severity: Severity
    timestamp: str | None = None
    ranks: str = ""
    level: str | None = None
    catalogue_id: str | None = None
    cause_id: str | None = None
    """For tracebacks: the catalogue entry matching the exception line (e.g. cuda-oom)."""
    offset: int | None = None
    """Byte offset of the first line in the source file, when the reader knows it."""
    source: str | None = None
    """Which file the event came from (a new launch writes a new file)."""

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    @property
    def line_count(self) -> int:
        return len(self.lines)

    @property
    def rank_map(self) -> dict[str, int]:
        """`"DP1 TP5"` -> `{"DP": 1, "TP": 5}`."""
        return rank_parts(self.ranks)

    @property
    def time(self) -> datetime | None:
        return None if self.timestamp is None else parse_timestamp(self.timestamp)

    @property
    def is_batch(self) -> bool:
        return self.message.startswith(BATCH_PREFIXES)


@dataclass(frozen=True, slots=True)
class CatalogueEntry:
    """A known message: what it means and what to do. Loaded from catalogue.toml."""

    id: str
    pattern: str
    severity: Severity
    explanation: str
    action: str
    title: str = ""
    literals: tuple[str, ...] = ()
    """Substrings every match contains (the cheap prefilter); derived from the pattern when
    the TOML entry does not list them."""
    multiline: bool = False
    """Unprefixed lines after a matching line belong to it (e.g. a `Possible solutions:` block)."""
    versions: str = ""
    """Which SGLang versions print it, free text (e.g. "< 0.5.23")."""


@dataclass(frozen=True, slots=True)
class FollowerNotice:
    """A non-line event from the follower, shown in the app's event log; never silent."""

    kind: Literal[
        "started",
        "rotated",
        "switched",
        "truncated",
        "gap",
        "waiting",
        "lost",
        "reconnecting",
        "resumed",
        "error",
    ]
    detail: str = ""
    path: str = ""
    offset: int = 0
    at: datetime = field(default_factory=datetime.now)


new_event: Callable[..., LogEvent] = fast_constructor(LogEvent)
EVENT_TWIN: type | None = getattr(new_event, "twin", None)
"""The mutable twin behind new_event (None when this Python cannot re-class): the parser's
innermost loop builds `EVENT_TWIN(...)` and sets `__class__ = LogEvent` itself."""
"""`new_event(seq, kind, lines, message, severity, timestamp, ranks, level, catalogue_id,
cause_id, offset, source)`, all twelve positional: what the parser uses for `LogEvent(...)`."""
