"""HostSummary: one host at one instant, reduced to what a fleet overview or a scrape needs.

Plain pydantic data built by `console.fleet.summary.summarize` from a session's HostState; it
imports nothing of the session, so a widget may render it (widgets do no I/O).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

AlertId = Literal[
    "host-unreachable", "server-down", "eager-decode", "kv-pool-full", "gpu-throttled",
    "gpu-xid", "gpu-agent",
]
AlertLevel = Literal["warning", "error"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Alert(_Frozen):
    id: AlertId
    level: AlertLevel
    message: str


class GpuLine(_Frozen):
    """One GPU's latest reading (None: not reported)."""

    index: int
    name: str | None = None
    util_pct: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    mem_used_mib: float | None = None
    mem_total_mib: float | None = None
    temp_c: float | None = None
    throttle_reasons: tuple[str, ...] = ()
    """Clock-event reasons that cost throughput (GpuReading.throttled)."""
    xid_count: int | None = None
    """XID errors the agent has seen on this GPU (cumulative)."""


class GpuSummary(_Frozen):
    count: int
    util_mean_pct: float | None = None
    util_max_pct: float | None = None
    power_w: float | None = None
    """Sum over the GPUs that report power."""
    power_limit_w: float | None = None
    mem_used_mib: float | None = None
    mem_total_mib: float | None = None
    throttled: tuple[int, ...] = ()
    """Indexes of the GPUs throttled now."""
    xid_count: int = 0
    xid_new: tuple[int, ...] = ()
    """XIDs new in the latest sample (all GPUs)."""
    age_s: float | None = None
    """How old the latest sample is at the summary's instant."""
    gpus: tuple[GpuLine, ...] = ()


class ServerSummary(_Frozen):
    state: str
    """unknown, stopped, starting, ready, stopping or failed (console.session.events)."""
    version: str | None = None
    profile: str | None = None
    uptime_s: float | None = None
    detail: str = ""


class LoadSummary(_Frozen):
    """The server's live load, from its Decode batch lines and/or /metrics."""

    source: str
    gen_tok_s: float | None = None
    """Generated tokens per second now (None while idle: see gen_last_tok_s)."""
    gen_last_tok_s: float | None = None
    idle: bool = False
    running: float | None = None
    queued: float | None = None
    token_usage: float | None = None
    """KV pool usage, 0-1."""
    cuda_graph: bool | None = None
    retractions: int = 0


class SweepSummary(_Frozen):
    """The newest complete sweep of this host seen by the session (and one running now)."""

    run_id: str | None = None
    points: int = 0
    peak_tok_s: float | None = None
    axis: Literal["concurrency", "rate"] = "concurrency"
    """The sweep's x axis: closed-loop concurrency, or the offered request rate of a sweep run
    with --request-rate (then the *_concurrency fields are None, the *_request_rate ones set)."""
    peak_concurrency: int | None = None
    peak_request_rate: float | None = None
    """Requests per second; inf: every request at once (console/bench/arrivals.py)."""
    knee_kind: str | None = None
    """saturates, declines, scaling or insufficient (console.bench.knee)."""
    knee_concurrency: int | None = None
    knee_request_rate: float | None = None
    top_cause: str | None = None
    causes: tuple[str, ...] = ()
    running: bool = False
    step: int = 0
    total: int = 0


class HostSummary(_Frozen):
    host: str
    at: datetime
    reachable: bool
    connection: str
    """connecting, connected, lost, reconnecting, failed or closed."""
    unreachable_reason: str | None = None
    gpus: GpuSummary | None = None
    server: ServerSummary
    load: LoadSummary | None = None
    sweep: SweepSummary | None = None
    alerts: tuple[Alert, ...] = ()

    def alert(self, alert_id: AlertId) -> Alert | None:
        return next((a for a in self.alerts if a.id == alert_id), None)
