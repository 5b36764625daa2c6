"""Per-host orchestration: one HostSession per configured host owns its transport, GPU collector,
log follower, server state and sweeps, and publishes typed events. No Textual import here: the
console app is one consumer, the headless commands are others."""

from console.session.events import (
    ConnectionChanged,
    GpuUpdate,
    HostKeyChanged,
    HostKeyUnknown,
    LogBatch,
    Problem,
    ServerUpdate,
    SessionEvent,
    StatsUpdate,
    SweepDone,
    SweepPointDone,
    SweepProgress,
    TopologyUpdate,
)
from console.session.state import EventRecord, HostState, ServerState

__all__ = [
    "ConnectionChanged",
    "EventRecord",
    "GpuUpdate",
    "HostKeyChanged",
    "HostKeyUnknown",
    "HostState",
    "LogBatch",
    "Problem",
    "ServerState",
    "ServerUpdate",
    "SessionEvent",
    "StatsUpdate",
    "SweepDone",
    "SweepPointDone",
    "SweepProgress",
    "TopologyUpdate",
]
