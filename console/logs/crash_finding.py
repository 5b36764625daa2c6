"""The crash (or failed launch) a log ends in, as one finding: what `plateau logscan`,
`plateau diagnose --log` and the console's Why and Events views put first.

Read from the assembler's events (console/logs/assembler.py), so every reader sees the same
crash at the same line: a GPU out-of-memory line in any wording, an NCCL failure, a traceback
through the CUDA-graph capture, a catalogue entry that ends a launch (FATAL_IDS), or a server
traceback's last exception line. A test runner's traceback (unittest asserting a throughput)
is not the server crashing (console/sglang/crash.py says which frames are whose).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from console.logs.models import LogEvent, Severity
from console.sglang.crash import (
    SERVER_FRAMES,
    TRACEBACK,
    exception_line,
    is_capture_failure,
    is_harness_traceback,
    is_nccl_failure,
    is_oom,
    looks_like_exception,
)
from console.sglang.startup import parse_startup

FATAL_IDS = frozenset(
    {
        "scheduler-exception",
        "manager-exception",
        "sigquit-child-launch",
        "sigquit-running",
        "warmup-failed",
        "scheduler-died-init",
        "not-enough-memory",
        "cuda-graph-capture-failed",
        "decode-oom",
        "subprocess-crashed",
        "watchdog-timeout",
    }
)
"""Catalogue entries that end a launch (a whole-log scan's launch outcome: scan_launch.py).
Here, not beside the scan's pydantic models: the console's session watches for crashes from
its start, and the scan's models are no part of its first frame."""

CrashKind = Literal["oom", "nccl", "capture", "fatal", "exception"]
_RANK: dict[str, int] = {"oom": 5, "nccl": 4, "capture": 3, "fatal": 2, "exception": 1}
TITLES: dict[str, str] = {
    "oom": "GPU out of memory",
    "nccl": "NCCL collective failed",
    "capture": "CUDA-graph capture failed at startup",
    "fatal": "the server failed",
    "exception": "the server raised an exception",
}
CRASH_IDS = FATAL_IDS | {"cuda-oom", "nccl-error", "nccl-collective-timeout",
                         "cuda-illegal-memory", "cuda-device-assert", "killed"}
"""Catalogue entries that end a launch or a serving process."""
_EXAMPLE_CHARS = 300
LOOSE_LINES = 30
"""How far before a cut traceback its chained exception line may be."""


@dataclass(frozen=True, slots=True)
class CrashFinding:
    kind: CrashKind
    line: int
    """1-based line of the file where it shows (the OOM line, the exception line, the
    catalogue entry's line)."""
    text: str
    """The line as printed (the exception line of a traceback), cut at 300 characters."""
    timestamp: str | None = None

    @property
    def title(self) -> str:
        return TITLES[self.kind]

    @property
    def capture(self) -> bool:
        """Died capturing CUDA graphs: what the capture lines said is not what runs."""
        return self.kind == "capture"

    def sentence(self) -> str:
        """`GPU out of memory at line 14: RuntimeError: CUDA error: out of memory`."""
        return f"{self.title} at line {self.line}: {self.text}"

    def as_json(self) -> dict[str, object]:
        return {"kind": self.kind, "title": self.title, "line": self.line,
                "timestamp": self.timestamp, "text": self.text}


class CrashWatch:
    """Feed events in file order; `finding` is the strongest crash seen (OOM over NCCL over a
    capture failure over a fatal catalogue entry over a bare exception; the first of a kind)."""

    def __init__(self) -> None:
        self.finding: CrashFinding | None = None
        self._capturing: int | None = None
        """The line of the capture begin not yet ended."""
        self._loose: tuple[int, str] | None = None
        """The last exception line seen outside a traceback (line, text): an excerpt that
        begins inside a traceback, before a chained one (`During handling of the above
        exception, another exception occurred:`) that is cut before its own."""

    def feed(self, events: Iterable[LogEvent]) -> None:
        for event in events:
            if "apture" in event.message:
                self._capture_line(event)
            if event.severity >= Severity.WARNING:
                self._event(event)

    def _capture_line(self, event: LogEvent) -> None:
        """A capture's begin opens its window, its end closes it: a crash inside the window
        (a cut traceback through the scheduler's init, `Scheduler hit an exception` right
        after `Capture cuda graph bs [1, 2, 4, 8]`) died capturing."""
        line = parse_startup(event.message)
        if line is None:
            return
        if line.kind == "capture_begin":
            self._capturing = event.seq + 1
        elif line.kind == "capture_end":
            self._capturing = None

    def _event(self, event: LogEvent) -> None:
        lines = event.lines
        traceback = event.kind == "traceback" or any(TRACEBACK in line for line in lines)
        harness = traceback and is_harness_traceback(lines)
        exception = exception_line(lines) if traceback else None
        oom_at = next((i for i, line in enumerate(lines) if is_oom(line)), None)
        if oom_at is not None and not harness:
            text = exception if exception and is_oom(exception) else lines[oom_at]
            self._offer("oom", event, _index(lines, text, oom_at), text)
            return
        nccl_at = next((i for i, line in enumerate(lines) if is_nccl_failure(line)), None)
        if nccl_at is not None and not harness and (
                event.catalogue_id in CRASH_IDS or event.cause_id in CRASH_IDS or traceback
                or event.severity >= Severity.ERROR):
            text = next((line for line in lines if line.lstrip().startswith("what():")),
                        exception or lines[nccl_at])
            self._offer("nccl", event, _index(lines, text, nccl_at), text)
            return
        if harness:
            return
        if not traceback and event.severity >= Severity.ERROR and looks_like_exception(
                event.message):
            self._loose = (event.seq + 1, event.message.strip())
        fatal = event.catalogue_id in CRASH_IDS or event.cause_id in CRASH_IDS
        if exception is None and traceback and not fatal:
            self._cut(event)
        elif (is_capture_failure(lines) or self._in_capture(event)) and (traceback or fatal):
            self._offer("capture", event, _index(lines, exception), exception or event.message)
        elif fatal:
            self._offer("fatal", event, _index(lines, exception), exception or event.message)
        elif exception is not None:
            self._offer("exception", event, _index(lines, exception), exception)

    def _cut(self, event: LogEvent) -> None:
        """A traceback cut before its exception line (an excerpt): its frames say whether
        the server died capturing graphs; the text is the exception line just before it
        (a chained traceback's first part) or the line that announced it."""
        lines = event.lines
        capture = is_capture_failure(lines) or self._in_capture(event)
        if not capture and not any(SERVER_FRAMES in line for line in lines):
            return
        kind: CrashKind = "capture" if capture else "exception"
        loose = self._loose
        if loose is not None and 0 < event.seq + 1 - loose[0] <= LOOSE_LINES:
            self._offer_at(kind, loose[0], loose[1], event.timestamp)
        else:
            self._offer(kind, event, 0, lines[0])

    def _in_capture(self, event: LogEvent) -> bool:
        """Within LOOSE_LINES of a capture begin that did not end (what every reader keeps
        of the lines before a crash: console/logs/crash_blocks.py)."""
        begin = self._capturing
        return begin is not None and 0 < event.seq + 1 - begin <= LOOSE_LINES

    def _offer(self, kind: CrashKind, event: LogEvent, index: int, text: str) -> None:
        self._offer_at(kind, event.seq + 1 + index, text, event.timestamp)

    def _offer_at(self, kind: CrashKind, line: int, text: str, timestamp: str | None) -> None:
        found = self.finding
        if found is not None and _RANK[found.kind] >= _RANK[kind]:
            return
        self.finding = CrashFinding(kind, line, text.strip()[:_EXAMPLE_CHARS], timestamp)


def _index(lines: tuple[str, ...], text: str | None, default: int = 0) -> int:
    """Where `text` (an exception line) is in the event's lines (the last such line);
    `default` when it is not one of them."""
    if text is None:
        return default
    wanted = text.strip()
    for index in range(len(lines) - 1, -1, -1):
        if lines[index].strip() == wanted or lines[index].endswith(wanted):
            return index
    return default
