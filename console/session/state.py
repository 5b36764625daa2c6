"""HostState: everything the console knows about one host, folded from session events.

Pure data and a reducer (`apply`), so the app, the headless commands and tests share it. Each
aspect has a change counter, so a renderer can skip work when nothing it shows has changed.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

from console.logs.models import LogEvent
from console.logs.stats_snapshot import ServerStats as StatsSnapshot
from console.session.events import (
    ABUpdate,
    ConnectionChanged,
    ConnectionStatus,
    GpuUpdate,
    HostKeyChanged,
    HostKeyUnknown,
    LogBatch,
    Problem,
    ServerStateName,
    ServerUpdate,
    SessionEvent,
    StatsUpdate,
    SweepDone,
    SweepPointDone,
    SweepProgress,
    TopologyUpdate,
)
from console.sglang.resolved import Resolved, is_startup_line, resolved_settings

if TYPE_CHECKING:  # the run models come with the first sweep or A/B
    from console.bench.models import StepResult
    from console.config_models import HostConfig
    from console.gpu.models import GpuHeader, GpuSample  # the GPU models with the first sample
    from console.jobs.ab_models import ABResult

Level = Literal["info", "warning", "error"]

CANCELLED = "cancelled"
"""A SweepDone's detail when the operator cancelled it (console/session/service.py, the bench
sweep's status): said as a cancel, never as a failure."""

Aspect = Literal["connection", "gpus", "topology", "log", "stats", "server", "sweep", "events",
                 "host-key"]
"""What a renderer redraws; "host-key": an unknown host key waits for the operator (asked,
not drawn)."""
Clock = Callable[[], datetime]

ServerState = ServerStateName

LOG_RING = 5_000
EVENT_LOG_MAX = 2_000
GPU_RING = 240  # as long as the GPU panel's history (widgets.gpu_panel.HISTORY_LEN)
STARTUP_KEPT = 256  # startup lines kept for requested → effective (a few per rank)


def utc_now() -> datetime:
    return datetime.now(UTC)


def current_profile(state: HostState, host: HostConfig) -> str | None:
    """The host's current profile: the running server's, else the host's configured one (the
    header, restart, the flags editor, A/B and a sweep's label all mean this)."""
    return state.profile or host.profile


@dataclass(frozen=True, slots=True)
class EventRecord:
    """One line of the event log."""

    at: datetime
    host: str
    source: str
    level: Level
    message: str


@dataclass
class SweepView:
    run_id: str | None = None
    running: bool = False
    step: int = 0
    total: int = 0
    concurrency: int | None = None
    detail: str = ""
    points: list[StepResult] = field(default_factory=list)
    last_ok: bool | None = None


@dataclass
class CompleteRun:
    """The newest sweep that finished: what the chart keeps while a new one runs, and after
    a new one is cancelled or fails."""

    run_id: str
    points: list[StepResult]


@dataclass
class ABView:
    """The newest A/B of this host: progress while it runs, the result when done."""

    name_a: str
    name_b: str
    preset: str
    stage: str = "validate"
    message: str = ""
    running: bool = True
    result: ABResult | None = None
    run_ids: list[str] = field(default_factory=list)  # the sweeps that belong to it
    side: str | None = None  # "A" or "B": whose sweep is running now
    steps_a: list[StepResult] = field(default_factory=list)  # every repeat so far, per side
    steps_b: list[StepResult] = field(default_factory=list)

    def owns(self, run_id: str | None) -> bool:
        return run_id is not None and run_id in self.run_ids


@dataclass
class HostState:
    host: str
    clock: Clock = utc_now
    connection: ConnectionStatus = "connecting"
    connection_detail: str = ""
    gpu_sample: GpuSample | None = None
    # The recent samples, so a panel that missed some (drawn after several arrived, a replay
    # played fast, a host switched to) still gets every point of its history.
    gpu_samples: deque[GpuSample] = field(default_factory=lambda: deque(maxlen=GPU_RING))
    gpu_total: int = 0
    gpus_at: datetime | None = None
    gpu_header: GpuHeader | None = None
    gpu_error: str | None = None
    """Why the GPU agent failed (its supervisor retries), until a sample comes again: the GPU
    panel and the fleet row say it once rather than "waiting for the agent…" (issue 41.8)."""
    log: deque[LogEvent] = field(default_factory=lambda: deque(maxlen=LOG_RING))
    log_total: int = 0
    server_stats: StatsSnapshot | None = None
    server_state: ServerState = "unknown"
    server_version: str | None = None
    profile: str | None = None
    server_argv: tuple[str, ...] | None = None  # the running server's launch argv (redacted)
    server_since: datetime | None = None
    server_detail: str = ""
    sweep: SweepView = field(default_factory=SweepView)
    ab: ABView | None = None
    last_complete: CompleteRun | None = None
    # The unknown host key awaiting the operator's decision (cleared once connected).
    host_key: HostKeyUnknown | None = None
    events: deque[EventRecord] = field(default_factory=lambda: deque(maxlen=EVENT_LOG_MAX))
    # The server's startup lines that say what it resolved (console.sglang.resolved), and what
    # it runs with other than asked: read as they arrive, since the log ring forgets them.
    startup_lines: deque[str] = field(default_factory=lambda: deque(maxlen=STARTUP_KEPT))
    effective: list[Resolved] = field(default_factory=list)
    revision: dict[str, int] = field(default_factory=dict)

    def bump(self, aspect: Aspect) -> None:
        self.revision[aspect] = self.revision.get(aspect, 0) + 1

    def note(self, source: str, message: str, level: Level) -> None:
        self.events.append(EventRecord(self.clock(), self.host, source, level, message))
        self.bump("events")

    def uptime_seconds(self) -> float | None:
        if self.server_state != "ready" or self.server_since is None:
            return None
        return max(0.0, (self.clock() - self.server_since).total_seconds())

    def apply(self, event: SessionEvent) -> tuple[Aspect, ...]:
        """Fold one event in; returns the aspects that changed."""
        match event:
            case GpuUpdate():
                self.gpu_error = None
                self.gpu_sample = event.sample
                self.gpu_samples.append(event.sample)
                self.gpu_total += 1
                self.gpus_at = event.at
                self.bump("gpus")
                return ("gpus",)
            case LogBatch():
                self.log.extend(event.events)
                self.log_total += len(event.events)
                self._read_startup(event)
                self.bump("log")
                return ("log",)
            case StatsUpdate():
                self.server_stats = event.stats
                self.bump("stats")
                return ("stats",)
            case TopologyUpdate():
                self.gpu_header = event.header
                self.bump("topology")
                return ("topology",)
            case ConnectionChanged():
                return self._connection(event)
            case ServerUpdate():
                return self._server(event)
            case SweepProgress():
                sweep = self.sweep
                if sweep.run_id != event.run_id:
                    self.sweep = sweep = SweepView(run_id=event.run_id)
                    self._claim_for_ab(event.run_id)
                sweep.running = True
                sweep.step, sweep.total = event.step, event.total
                sweep.concurrency, sweep.detail = event.concurrency, event.detail
                self.bump("sweep")
                return ("sweep",)
            case SweepPointDone():
                if self.sweep.run_id != event.run_id:
                    self.sweep = SweepView(run_id=event.run_id, running=True)
                self.sweep.points.append(event.point)
                ab = self.ab
                if ab is not None and ab.running and ab.owns(event.run_id) and ab.side:
                    (ab.steps_a if ab.side == "A" else ab.steps_b).append(event.point)
                self.bump("sweep")
                return ("sweep",)
            case SweepDone():
                self.sweep.running = False
                self.sweep.last_ok = event.ok
                if event.ok and self.sweep.points:
                    self.last_complete = CompleteRun(event.run_id, list(self.sweep.points))
                self.sweep.detail = event.detail
                if not event.ok and event.detail == CANCELLED:  # the operator's x: no failure
                    self.note("sweep", f"sweep {event.run_id} cancelled", "warning")
                    self.bump("sweep")
                    return ("sweep", "events")
                level: Level = "info" if event.ok else "error"
                text = f"sweep {event.run_id} {'finished' if event.ok else 'failed'}"
                self.note("sweep", f"{text}: {event.detail}" if event.detail else text, level)
                self.bump("sweep")
                return ("sweep", "events")
            case ABUpdate():
                return self._ab(event)
            case HostKeyUnknown() | HostKeyChanged():
                return self._host_key(event)
            case Problem():
                failed = _gpu_failure(event)
                self.events.append(
                    EventRecord(
                        event.at or self.clock(), self.host, event.source, event.level,
                        event.message,
                    )
                )
                self.bump("events")
                if failed is None or failed == self.gpu_error:
                    return ("events",)
                self.gpu_error = failed
                self.bump("gpus")
                return ("events", "gpus")
        return ()

    def _read_startup(self, batch: LogBatch) -> None:
        found = [e.lines[0] for e in batch.events if is_startup_line(e.lines[0])]
        if found:
            self.startup_lines.extend(found)
            self.effective = resolved_settings(self.startup_lines)

    def _claim_for_ab(self, run_id: str) -> None:
        ab = self.ab
        if ab is not None and ab.running:
            ab.run_ids.append(run_id)

    def _ab(self, event: ABUpdate) -> tuple[Aspect, ...]:
        ab = self.ab
        if ab is None or not ab.running or (ab.name_a, ab.name_b) != (event.name_a, event.name_b):
            self.ab = ab = ABView(event.name_a, event.name_b, event.preset)
        if event.stage in ("sweep-a", "sweep-b"):
            ab.side = "A" if event.stage == "sweep-a" else "B"
        ab.stage, ab.message, ab.running = event.stage, event.message, event.running
        if event.result is not None:
            ab.result = event.result
        level: Level = {
            "failed": "error", "cancelled": "warning",
        }.get(event.stage, "info")  # type: ignore[assignment]
        text = f"A/B {ab.name_a} vs {ab.name_b}: {event.stage}"
        self.note("ab", f"{text}: {event.message}" if event.message else text, level)
        self.bump("sweep")
        return ("sweep", "events")

    def _host_key(self, event: HostKeyUnknown | HostKeyChanged) -> tuple[Aspect, ...]:
        """Not connected, and why; an unknown key waits for a decision, a changed one is an
        error the operator must see."""
        unknown = isinstance(event, HostKeyUnknown)
        self.host_key = event if isinstance(event, HostKeyUnknown) else None
        self.connection = "failed"
        self.connection_detail = (
            f"unknown host key {event.fingerprint}" if unknown
            else f"HOST KEY CHANGED ({event.fingerprint})"
        )
        self.bump("connection")
        if unknown:
            self.note("host-key", f"unknown host key for {event.address}:{event.port}: "
                      f"{event.key_type} {event.fingerprint}; not connected until you accept "
                      "or refuse it", "warning")
            return ("connection", "host-key", "events")
        else:
            self.note("host-key", event.message or f"HOST KEY CHANGED for {event.address}:"
                      f"{event.port}: {event.key_type} {event.fingerprint}; refusing to "
                      "connect", "error")
        return ("connection", "events")

    def _connection(self, event: ConnectionChanged) -> tuple[Aspect, ...]:
        previous = self.connection
        self.connection, self.connection_detail = event.status, event.detail
        if event.status == "connected":
            self.host_key = None
        self.bump("connection")
        if event.status == previous:
            return ("connection",)
        level: Level = {
            "lost": "error",
            "failed": "error",
            "reconnecting": "warning",
        }.get(event.status, "info")  # type: ignore[assignment]
        detail = f": {event.detail}" if event.detail else ""
        self.note("connection", f"{event.status}{detail}", level)
        return ("connection", "events")

    def _server(self, event: ServerUpdate) -> tuple[Aspect, ...]:
        changed_state = event.state != self.server_state
        if not changed_state and self._server_says_nothing_new(event):
            # The status poll's usual answer (every 2 s a host, 64 hosts): nothing to redraw.
            return ()
        if changed_state and event.state == "starting":  # a new startup says it all again
            self.startup_lines.clear()
            self.effective = []
        self.server_state = event.state
        if event.version is not None:
            self.server_version = event.version
        if event.profile is not None:
            self.profile = event.profile
            self.server_argv = event.argv
        if event.since is not None:
            self.server_since = event.since
        elif changed_state and event.state == "ready":
            self.server_since = self.clock()
        self.server_detail = event.detail
        self.bump("server")
        if not changed_state:
            return ("server",)
        level: Level = "error" if event.state == "failed" else "info"
        detail = f": {event.detail}" if event.detail else ""
        self.note("server", f"server {event.state}{detail}", level)
        return ("server", "events")

    def _server_says_nothing_new(self, event: ServerUpdate) -> bool:
        return ((event.version is None or event.version == self.server_version)
                and (event.profile is None or event.profile == self.profile)
                and (event.profile is None or event.argv == self.server_argv)
                and (event.since is None or event.since == self.server_since)
                and event.detail == self.server_detail)


_RETRY = re.compile(r"; (retrying|restarting) in \d+s$")


def retry_reason(message: str) -> str:
    """A supervised loop's failure without its changing backoff ("gpu failed: X; retrying in
    4s" -> "gpu failed: X"): the same failure, said again, reads the same."""
    return _RETRY.sub("", message)


def _gpu_failure(event: Problem) -> str | None:
    """Why the GPU agent failed, from the supervisor's Problem ("gpu failed: X; retrying…")."""
    if event.source != "gpu" or event.level != "error" or not _RETRY.search(event.message):
        return None
    return retry_reason(event.message).removeprefix("gpu failed: ")
