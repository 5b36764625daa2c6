"""Typed events a HostSession publishes. Frozen dataclasses: cheap to build, safe to share.

Payloads that belong to other areas (GPU samples, batch stats, sweep steps) are carried as
those areas' own typed objects; the session never re-models them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from console.logs.models import LogEvent
from console.logs.stats_snapshot import ServerStats as StatsSnapshot

if TYPE_CHECKING:  # a sweep's and an A/B's results: the run models come with the first job
    from console.bench.models import StepResult
    from console.gpu.models import GpuHeader, GpuSample  # with the first sample
    from console.jobs.ab_models import ABResult

ConnectionStatus = Literal["connecting", "connected", "lost", "reconnecting", "failed", "closed"]
ServerStateName = Literal["unknown", "stopped", "starting", "ready", "stopping", "failed"]


@dataclass(frozen=True, slots=True)
class ConnectionChanged:
    host: str
    status: ConnectionStatus
    detail: str = ""


@dataclass(frozen=True, slots=True)
class GpuUpdate:
    """The newest tick of every GPU (a console.gpu.models.GpuSample)."""

    host: str
    sample: GpuSample
    at: datetime | None = None


@dataclass(frozen=True, slots=True)
class TopologyUpdate:
    """Sent once per agent connection: GPUs, topology, NVLink (a console.gpu GpuHeader)."""

    host: str
    header: GpuHeader


@dataclass(frozen=True, slots=True)
class LogBatch:
    """New log events since the last batch (the session batches every ~150 ms)."""

    host: str
    events: tuple[LogEvent, ...]
    source: str = ""


@dataclass(frozen=True, slots=True)
class StatsUpdate:
    """The rolling server stats (console.logs.server_stats.ServerStats snapshot)."""

    host: str
    stats: StatsSnapshot


@dataclass(frozen=True, slots=True)
class ServerUpdate:
    host: str
    state: ServerStateName
    version: str | None = None
    profile: str | None = None
    since: datetime | None = None
    detail: str = ""
    pid: int | None = None
    # The command line the running server was launched with (its launch record, redacted),
    # whoever launched it: what the header compares with the profile it is named after.
    argv: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class SweepProgress:
    host: str
    run_id: str
    step: int
    total: int
    concurrency: int | None = None
    detail: str = ""


@dataclass(frozen=True, slots=True)
class SweepPointDone:
    """One finished sweep step (a console.bench step result)."""

    host: str
    run_id: str
    point: StepResult


@dataclass(frozen=True, slots=True)
class SweepDone:
    host: str
    run_id: str
    ok: bool
    detail: str = ""


@dataclass(frozen=True, slots=True)
class ABUpdate:
    """A/B progress: `stage` is console.jobs.ab's stage, or "failed" / "cancelled";
    `result` (an ABResult) comes with stage "done"."""

    host: str
    stage: str
    name_a: str
    name_b: str
    preset: str
    message: str = ""
    result: ABResult | None = None

    @property
    def running(self) -> bool:
        return self.stage not in ("done", "failed", "cancelled")


@dataclass(frozen=True, slots=True)
class HostKeyUnknown:
    """The host presented a key known_hosts does not list: the session waits (no retries)
    until the operator accepts this exact fingerprint (`accept_host_key`) or refuses it."""

    host: str
    address: str
    port: int
    key_type: str
    fingerprint: str
    known_hosts: str
    message: str = ""


@dataclass(frozen=True, slots=True)
class HostKeyChanged:
    """The host presented a key other than the one known_hosts lists (or a key was refused by
    checks we cannot override): never accepted from the console; the session stops trying."""

    host: str
    address: str
    port: int
    key_type: str
    fingerprint: str
    known_hosts: str
    message: str = ""


@dataclass(frozen=True, slots=True)
class Problem:
    """A background failure or warning: shown in the event log and as a notification."""

    host: str
    source: str
    message: str
    level: Literal["info", "warning", "error"] = "error"
    at: datetime | None = field(default=None)


SessionEvent = (
    ConnectionChanged
    | GpuUpdate
    | TopologyUpdate
    | LogBatch
    | StatsUpdate
    | ServerUpdate
    | SweepProgress
    | SweepPointDone
    | SweepDone
    | ABUpdate
    | HostKeyUnknown
    | HostKeyChanged
    | Problem
)
