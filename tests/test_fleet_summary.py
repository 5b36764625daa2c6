"""summarize(state, now): a HostState folded from real events (SGLang's own Decode lines, agent
samples, server statuses) reduced to a HostSummary with its alerts."""

from __future__ import annotations

from datetime import timedelta

from console.bench.models import StepMetrics, StepResult
from console.fleet.summary import KV_FULL_USAGE, LastRun, summarize
from console.logs.assembler import parse_lines
from console.logs.server_stats import IDLE_AFTER_S, StatsAggregator
from console.session.events import (
    ConnectionChanged,
    ServerStats,
    ServerStatus,
    SweepDone,
    SweepPointDone,
    SweepProgress,
)
from console.session.state import HostState
from tests.support.fleet_fixtures import EAGER_FULL_LINE, GRAPH_LINE, T0, gpu, host_state


def test_a_healthy_host_summarised() -> None:
    summary = summarize(host_state(GRAPH_LINE), T0)
    assert summary.reachable and summary.unreachable_reason is None
    gpus = summary.gpus
    assert gpus is not None and gpus.count == 2
    assert (gpus.util_mean_pct, gpus.util_max_pct) == (70.0, 90.0)
    assert (gpus.power_w, gpus.power_limit_w) == (900.0, 1400.0)
    assert gpus.mem_total_mib == 2 * 143_771 and gpus.age_s == 2.0
    assert summary.server.state == "ready" and summary.server.version == "0.5.23"
    assert summary.server.profile == "tp2" and summary.server.uptime_s == 90.0
    load = summary.load
    assert load is not None and load.source == "log"
    assert (load.gen_tok_s, load.running, load.queued) == (5321.47, 64, 0)
    assert load.token_usage == 0.12 and load.cuda_graph is True
    assert summary.alerts == () and summary.sweep is None


def test_eager_decode_and_full_pool_alert() -> None:
    summary = summarize(host_state(GRAPH_LINE, EAGER_FULL_LINE), T0)
    assert summary.load is not None and summary.load.cuda_graph is False
    assert summary.load.token_usage is not None and summary.load.token_usage >= KV_FULL_USAGE
    eager, full = summary.alert("eager-decode"), summary.alert("kv-pool-full")
    assert eager is not None and "batch 160" in eager.message
    assert full is not None and "0.97" in full.message
    state = host_state(GRAPH_LINE, EAGER_FULL_LINE)
    state.apply(ServerStatus("h200-a", "stopping"))
    assert summarize(state, T0).alerts == ()  # a stopping server's last batch is history


def test_a_retraction_is_a_full_pool_at_any_usage() -> None:
    retract = ("[2026-02-19 05:25:05 TP0] KV cache pool is full. Retract requests. "
               "#retracted_reqs: 3, #new_tokens_gained: 4096, #new_token_ratio: 0.4000 -> "
               "0.6000")
    summary = summarize(host_state(GRAPH_LINE, retract), T0)
    full = summary.alert("kv-pool-full")
    assert full is not None and "retractions" in full.message
    assert summary.alert("eager-decode") is None


def test_throttling_and_xid_alert() -> None:
    gpus = [gpu(0, clock_reasons=["sw power cap", "idle"]), gpu(1, xid_count=2, xid_new=[79])]
    summary = summarize(host_state(gpus=gpus), T0)
    assert summary.gpus is not None and summary.gpus.throttled == (0,)
    assert summary.gpus.gpus[0].throttle_reasons == ("sw power cap",)  # idle costs nothing
    assert summary.gpus.xid_count == 2 and summary.gpus.xid_new == (79,)
    throttled, xid = summary.alert("gpu-throttled"), summary.alert("gpu-xid")
    assert throttled is not None and "GPU 0 (sw power cap)" in throttled.message
    assert xid is not None and xid.level == "error" and "79" in xid.message


def test_server_down_and_host_unreachable() -> None:
    state = host_state(GRAPH_LINE)
    state.apply(ServerStatus("h200-a", "failed", detail="exit 1"))
    down = summarize(state, T0)
    alert = down.alert("server-down")
    assert alert is not None and "failed: exit 1" in alert.message
    assert down.server.uptime_s is None
    state.apply(ConnectionChanged("h200-a", "lost", "connection reset"))
    lost = summarize(state, T0 + timedelta(seconds=60))
    assert not lost.reachable and lost.unreachable_reason == "lost: connection reset"
    assert [a.id for a in lost.alerts] == ["host-unreachable"]  # stale figures raise nothing
    assert lost.gpus is not None and lost.gpus.age_s == 62.0


def test_still_connecting_is_no_alert() -> None:
    state = HostState("h200-b", clock=lambda: T0)
    summary = summarize(state, T0)
    assert not summary.reachable and summary.unreachable_reason == "connecting"
    assert summary.alerts == () and summary.gpus is None and summary.load is None


def _step(index: int, concurrency: int, tok_s: float) -> StepResult:
    metrics = StepMetrics(concurrency=concurrency, completed=10, total_tok_s=tok_s)
    return StepResult(index=index, concurrency=concurrency, status="ok", metrics=metrics)


def test_the_last_sweep_peak_knee_and_cause() -> None:
    state = host_state()
    for i, (c, tok_s) in enumerate([(8, 4000.0), (16, 7600.0), (32, 8000.0), (64, 7800.0)]):
        state.apply(SweepPointDone("h200-a", "7", _step(i, c, tok_s)))
    state.apply(SweepDone("h200-a", "7", True))
    seen = summarize(state, T0).sweep
    assert seen is not None and seen.run_id == "7" and seen.points == 4
    assert (seen.peak_tok_s, seen.peak_concurrency) == (8000.0, 32)
    assert (seen.knee_kind, seen.knee_concurrency) == ("saturates", 16)
    assert seen.top_cause is None and not seen.running
    # The history's newest run (with its diagnosis) wins over the session's own.
    stored = [_step(0, 1, 900.0), _step(1, 4, 3000.0), _step(2, 16, 2500.0)]
    last = LastRun("9", stored, ("cuda-graph-ceiling", "kv-pressure"))
    sweep = summarize(state, T0, last_run=last).sweep
    assert sweep is not None and sweep.run_id == "9" and sweep.points == 3
    assert (sweep.peak_tok_s, sweep.peak_concurrency) == (3000.0, 4)
    assert (sweep.knee_kind, sweep.knee_concurrency) == ("declines", 4)
    assert sweep.top_cause == "cuda-graph-ceiling"
    assert sweep.causes == ("cuda-graph-ceiling", "kv-pressure")


def test_a_running_sweep_before_any_finished() -> None:
    state = host_state()
    state.apply(SweepProgress("h200-a", "3", 2, 5, 16, "measure"))
    sweep = summarize(state, T0).sweep
    assert sweep is not None and sweep.running and (sweep.step, sweep.total) == (2, 5)
    assert sweep.peak_tok_s is None


def test_an_idle_servers_last_batch_raises_nothing() -> None:
    clock = [0.0]
    aggregator = StatsAggregator(clock=lambda: clock[0])
    aggregator.add_events(parse_lines([EAGER_FULL_LINE]))
    state = host_state()
    state.apply(ServerStats("h200-a", aggregator.snapshot()))
    assert summarize(state, T0).alert("eager-decode") is not None
    clock[0] = IDLE_AFTER_S + 1  # no Decode line since: SGLang logs none while idle
    assert aggregator.expire()
    state.apply(ServerStats("h200-a", aggregator.snapshot()))
    summary = summarize(state, T0)
    assert summary.load is not None and summary.load.idle and summary.load.gen_tok_s is None
    assert summary.alerts == ()
