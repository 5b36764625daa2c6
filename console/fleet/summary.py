"""summarize(state, now): one host's HostState reduced to a HostSummary, with its alerts.

Pure: the same state and instant always give the same summary (the fleet overview, the
exporter and the tests share it). `now` is the caller's clock, so a stale GPU sample or the
server's uptime are aged against the instant the summary is for, not the wall clock.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from statistics import fmean

from console.bench.knee import knee_of_steps, step_level
from console.bench.models import StepResult
from console.fleet.models import (
    Alert,
    GpuLine,
    GpuSummary,
    HostSummary,
    LoadSummary,
    ServerSummary,
    SweepSummary,
)
from console.gpu.models import GpuReading, GpuSample
from console.logs.stats_snapshot import ServerStats
from console.session.state import HostState

KV_FULL_USAGE = 0.95
"""Token usage at which the KV pool counts as full: SGLang retracts requests once it cannot
grow the decode batch ("KV cache pool is full. Retract requests.", srt/managers/scheduler.py,
0.5.23 :4525-4537); sglang#938 shows a plateau at `token usage 0.93` with a long queue."""
DOWN_STATES = frozenset({"stopped", "failed"})
UNREACHABLE = frozenset({"lost", "reconnecting", "failed", "closed"})


@dataclass(frozen=True)
class LastRun:
    """The host's newest measured sweep from the run history, with its diagnosis' cause ids
    (strongest first): the history holds them, the session only sees its own sweeps."""

    run_id: str
    steps: Sequence[StepResult]
    causes: Sequence[str] = ()


def summarize(state: HostState, now: datetime, *, last_run: LastRun | None = None
              ) -> HostSummary:
    """`last_run`: the history's newest sweep of this host; without it, the newest sweep this
    session finished (no causes then: they come from the stored evidence)."""
    reachable = state.connection == "connected"
    gpus = _gpus(state.gpu_sample, state, now)
    load = _load(state.server_stats)
    server = ServerSummary(
        state=state.server_state, version=state.server_version, profile=state.profile,
        uptime_s=_uptime(state, now), detail=state.server_detail,
    )
    return HostSummary(
        host=state.host, at=now, reachable=reachable, connection=state.connection,
        unreachable_reason=None if reachable else _why_not(state),
        gpus=gpus, server=server, load=load, sweep=_sweep(state, last_run),
        alerts=tuple(_alerts(state, reachable, gpus, load)),
    )


def _why_not(state: HostState) -> str:
    detail = state.connection_detail
    return f"{state.connection}: {detail}" if detail else state.connection


def _uptime(state: HostState, now: datetime) -> float | None:
    if state.server_state != "ready" or state.server_since is None:
        return None
    return max(0.0, (now - state.server_since).total_seconds())


def _sum(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _gpu_line(g: GpuReading) -> GpuLine:
    return GpuLine(
        index=g.index, name=g.name, util_pct=g.util_gpu, power_w=g.power_w,
        power_limit_w=g.power_limit_w, mem_used_mib=g.mem_used_mib,
        mem_total_mib=g.mem_total_mib, temp_c=g.temp_c, throttle_reasons=tuple(g.throttled),
        xid_count=g.xid_count,
    )


def _gpus(sample: GpuSample | None, state: HostState, now: datetime) -> GpuSummary | None:
    if sample is None:
        return None
    readings = sample.gpus
    utils = [g.util_gpu for g in readings if g.util_gpu is not None]
    age = (now - state.gpus_at).total_seconds() if state.gpus_at is not None else None
    return GpuSummary(
        count=len(readings),
        util_mean_pct=fmean(utils) if utils else None,
        util_max_pct=max(utils) if utils else None,
        power_w=_sum([g.power_w for g in readings]),
        power_limit_w=_sum([g.power_limit_w for g in readings]),
        mem_used_mib=_sum([g.mem_used_mib for g in readings]),
        mem_total_mib=_sum([g.mem_total_mib for g in readings]),
        throttled=tuple(g.index for g in readings if g.throttled),
        xid_count=sum(g.xid_count or 0 for g in readings),
        xid_new=tuple(x for g in readings for x in g.xid_new),
        age_s=max(0.0, age) if age is not None else None,
        gpus=tuple(_gpu_line(g) for g in readings),
    )


def _load(stats: ServerStats | None) -> LoadSummary | None:
    if stats is None or stats.source == "none":
        return None
    return LoadSummary(
        source=stats.source, gen_tok_s=stats.gen_throughput, gen_last_tok_s=stats.gen_last,
        idle=stats.gen_idle, running=stats.running_reqs, queued=stats.queue_reqs,
        token_usage=stats.token_usage, cuda_graph=stats.cuda_graph,
        retractions=stats.retractions,
    )


def peak(steps: Sequence[StepResult]) -> tuple[float, float] | None:
    """(total tok/s, level) of the best level, repeats averaged (as the knee does); the level
    is the concurrency, or the request rate in a --request-rate sweep (console.bench.knee)."""
    by_level: dict[float, list[float]] = defaultdict(list)
    for step in steps:
        if step.status == "ok" and step.metrics is not None:
            by_level[step_level(step)].append(step.metrics.headline_total_tok_s())
    if not by_level:
        return None
    level, values = max(by_level.items(), key=lambda kv: fmean(kv[1]))
    return fmean(values), level


def _sweep(state: HostState, last_run: LastRun | None) -> SweepSummary | None:
    view = state.sweep
    if last_run is None and state.last_complete is not None:
        last_run = LastRun(state.last_complete.run_id, state.last_complete.points)
    if last_run is None:
        if not view.running:
            return None
        return SweepSummary(run_id=view.run_id, running=True, step=view.step, total=view.total)
    steps, causes = last_run.steps, last_run.causes
    best = peak(steps)
    knee = knee_of_steps(steps)
    peak_at = best[1] if best else None
    rate = knee.axis == "rate"
    return SweepSummary(
        run_id=last_run.run_id, points=len(steps), peak_tok_s=best[0] if best else None,
        axis=knee.axis, peak_concurrency=_whole(peak_at) if not rate else None,
        peak_request_rate=peak_at if rate else None, knee_kind=knee.kind,
        knee_concurrency=knee.concurrency, knee_request_rate=knee.level if rate else None,
        top_cause=causes[0] if causes else None, causes=tuple(causes),
        running=view.running, step=view.step, total=view.total,
    )


def _whole(level: float | None) -> int | None:
    return None if level is None else int(level)


def _alerts(state: HostState, reachable: bool, gpus: GpuSummary | None,
            load: LoadSummary | None) -> list[Alert]:
    """What needs an operator now. Only a reachable host's GPU and load figures raise
    alerts: an unreachable one's are stale (its alert says so instead)."""
    if not reachable:
        if state.connection not in UNREACHABLE:
            return []  # still connecting: not yet a problem
        return [Alert(id="host-unreachable", level="error",
                      message=f"{state.host} unreachable ({_why_not(state)})")]
    out: list[Alert] = []
    if state.server_state in DOWN_STATES:
        detail = f": {state.server_detail}" if state.server_detail else ""
        out.append(Alert(id="server-down", level="error",
                         message=f"server {state.server_state}{detail}"))
    if load is not None and state.server_state == "ready" and not load.idle:
        out += _load_alerts(load)  # an idle or stopped server's last figures are history
    if gpus is not None:
        out += _gpu_alerts(gpus)
    if state.gpu_error is not None:  # said once here, not "waiting for the agent…" forever
        out.append(Alert(id="gpu-agent", level="error",
                         message=f"GPU agent failed: {state.gpu_error} (retrying)"))
    return out


def _load_alerts(load: LoadSummary) -> list[Alert]:
    out: list[Alert] = []
    # A decode batch runs eagerly when it is larger than the captured CUDA-graph ladder
    # (sglang#33483; `cuda graph: False` in Decode batch lines, sglang:is_cuda_graph 0):
    # small batches always have a graph, so an eager decode under load is a high batch.
    if load.cuda_graph is False and (load.running or 0) >= 1:
        out.append(Alert(id="eager-decode", level="warning",
                         message=f"decode runs eagerly (no CUDA graph) at batch "
                                 f"{load.running:.0f}"))
    usage = load.token_usage
    if (usage is not None and usage >= KV_FULL_USAGE) or load.retractions:
        said = [f"token usage {usage:.2f}"] if usage is not None else []
        if load.retractions:
            said.append(f"{load.retractions} retractions")
        out.append(Alert(id="kv-pool-full", level="warning",
                         message="KV pool full: " + ", ".join(said)))
    return out


def _gpu_alerts(gpus: GpuSummary) -> list[Alert]:
    out: list[Alert] = []
    if gpus.throttled:
        lines = {g.index: g for g in gpus.gpus}
        said = ", ".join(f"GPU {i} ({', '.join(lines[i].throttle_reasons)})"
                         for i in gpus.throttled)
        out.append(Alert(id="gpu-throttled", level="warning", message=f"throttled: {said}"))
    if gpus.xid_count or gpus.xid_new:
        new = f" (new: {', '.join(map(str, gpus.xid_new))})" if gpus.xid_new else ""
        out.append(Alert(id="gpu-xid", level="error",
                         message=f"{gpus.xid_count} XID error(s){new}"))
    return out


def host_up(summary: HostSummary, stale_after_s: float) -> tuple[bool, str]:
    """Whether the host answers now, and why not: connected is not enough, since a host can
    hang with its connection open; its GPU samples (every gpu_interval_s) must be fresh too."""
    if not summary.reachable:
        return False, summary.unreachable_reason or summary.connection
    gpus = summary.gpus
    if gpus is None or gpus.age_s is None:
        return False, "connected, no GPU sample yet"
    if gpus.age_s > stale_after_s:
        return False, f"connected, but no GPU sample for {gpus.age_s:.0f} s"
    return True, ""
