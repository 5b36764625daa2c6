"""Typed phases and progress events of the server lifecycle (stop → verify → launch → ready).

The app turns each event into a message for its restart panel; the CLI prints them. Nothing
in an event is a secret: commands are shown with secrets redacted and env values never appear.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

# SGLang's startup steps, read from its log by console/sglang/launch_log.py; the lifecycle's
# events carry them (re-exported: the server's event vocabulary).
from console.sglang.launch_log import StartupStep as StartupStep


class Phase(StrEnum):
    VALIDATE = "validate"
    STOP = "stop"
    VERIFY_STOPPED = "verify-stopped"
    LAUNCH = "launch"
    STARTUP = "startup"
    READY = "ready"
    DONE = "done"


@dataclass(frozen=True)
class PhaseStarted:
    phase: Phase
    message: str = ""
    at: float = field(default_factory=time.monotonic)


@dataclass(frozen=True)
class PhaseProgress:
    phase: Phase
    message: str
    step: StartupStep | None = None
    fraction: float | None = None  # 0..1 when known
    at: float = field(default_factory=time.monotonic)


@dataclass(frozen=True)
class PhaseFinished:
    phase: Phase
    elapsed_s: float
    message: str = ""
    at: float = field(default_factory=time.monotonic)


@dataclass(frozen=True)
class CommandShown:
    """The effective command line, shown before it runs (secrets redacted)."""

    command: str
    log_path: str


@dataclass(frozen=True)
class LogLine:
    """A (sanitised) server log line seen while following startup."""

    text: str


@dataclass(frozen=True)
class LifecycleFailed:
    phase: Phase
    reason: str
    log_lines: tuple[str, ...] = ()
    host_clean: bool = True


@dataclass(frozen=True)
class LifecycleDone:
    action: str  # "start", "stop", "restart", "adopt"
    timings: dict[str, float]
    message: str = ""
    version: str | None = None  # the started server's /server_info version, when known


LifecycleEvent = (
    PhaseStarted
    | PhaseProgress
    | PhaseFinished
    | CommandShown
    | LogLine
    | LifecycleFailed
    | LifecycleDone
)
EventSink = Callable[[LifecycleEvent], None]


def ignore_events(_event: LifecycleEvent) -> None:
    return None
