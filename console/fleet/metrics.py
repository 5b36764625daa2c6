"""The fleet as OpenMetrics families: per host its liveness, GPUs, server, load, Plateau's
conclusions (last sweep's peak, knee and causes; last A/B verdict) and what observing it costs.

Names follow Prometheus' conventions (https://prometheus.io/docs/practices/naming/): a
`plateau_` prefix, base units in the name (seconds, watts, bytes, celsius, ratio 0-1),
counters ending in `_total`, labels `host` and `gpu`. Every alert id is exported for every host
(0 or 1), so a panel or a rule never meets a missing series for a quiet host.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import get_args

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    InfoMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from console.fleet.history import ABLast
from console.fleet.models import AlertId, HostSummary
from console.text import sanitize

MIB = 1024 * 1024
REASON_MAX = 200
ALERT_IDS: tuple[str, ...] = get_args(AlertId)


@dataclass(frozen=True)
class ObserverCost:
    """What one host's observers have produced so far (counted by the exporter)."""

    events: dict[str, int] = field(default_factory=dict)
    """Session events by kind: gpu (agent samples), log (log lines), stats, server..."""
    agent_cpu_s: float = 0.0
    """The GPU agent's own CPU time on the host (its samples' agent_cpu_ms, summed)."""
    sample_cost_s: float | None = None
    """How long the agent's latest sample took to take."""


@dataclass(frozen=True)
class HostView:
    summary: HostSummary
    up: bool
    reason: str
    ab: ABLast | None = None
    cost: ObserverCost = ObserverCost()


@dataclass(frozen=True)
class FleetView:
    hosts: Sequence[HostView]
    cpu_s: float
    """The exporter's own CPU time (its sessions' observers run in it)."""


def _gauge(name: str, text: str, labels: Sequence[str] = ("host",), unit: str = ""
           ) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, text, labels=list(labels), unit=unit)


class FleetCollector(Collector):
    """Collects from `read()` at every scrape (a snapshot the exporter takes in its loop)."""

    def __init__(self, read: Callable[[], FleetView]) -> None:
        self.read = read

    def collect(self) -> Iterator[Metric]:
        view = self.read()
        for family in (_host, _gpus, _server, _sweep, _ab, _alerts, _cost):
            yield from family(view.hosts)
        cpu = CounterMetricFamily("plateau_exporter_cpu_seconds",
                                  "CPU time of the exporter and the observers it runs",
                                  unit="seconds")
        cpu.add_metric([], view.cpu_s)
        yield cpu


def _host(hosts: Sequence[HostView]) -> Iterator[Metric]:
    up = _gauge("plateau_host_up", "1 when the host answers (connected, fresh GPU samples)")
    info = InfoMetricFamily("plateau_host", "connection state and why the host is not up",
                            labels=["host"])
    for h in hosts:
        up.add_metric([h.summary.host], 1.0 if h.up else 0.0)
        info.add_metric([h.summary.host], {"connection": h.summary.connection,
                                           "reason": sanitize(h.reason)[:REASON_MAX]})
    yield from (up, info)


def _gpus(hosts: Sequence[HostView]) -> Iterator[Metric]:
    labels = ("host", "gpu")
    count = _gauge("plateau_gpus", "GPUs in the host's latest sample")
    age = _gauge("plateau_gpu_sample_age_seconds", "age of the host's latest GPU sample",
                 unit="seconds")
    util = _gauge("plateau_gpu_utilization_ratio", "GPU utilisation (0-1)", labels, "ratio")
    power = _gauge("plateau_gpu_power_watts", "GPU power draw", labels, "watts")
    limit = _gauge("plateau_gpu_power_limit_watts", "GPU power limit", labels, "watts")
    used = _gauge("plateau_gpu_memory_used_bytes", "GPU memory used", labels, "bytes")
    total = _gauge("plateau_gpu_memory_total_bytes", "GPU memory in all", labels, "bytes")
    temp = _gauge("plateau_gpu_temperature_celsius", "GPU temperature", labels, "celsius")
    throttled = _gauge("plateau_gpu_throttled", "1 while a clock-event reason that costs "
                       "throughput is active", labels)
    reason = _gauge("plateau_gpu_throttle_reason", "the active throttle reasons, 1 each",
                    (*labels, "reason"))
    xid = CounterMetricFamily("plateau_gpu_xid_errors", "XID errors seen on the GPU",
                              labels=list(labels))
    for h in hosts:
        gpus, host = h.summary.gpus, h.summary.host
        if gpus is None:
            continue
        count.add_metric([host], gpus.count)
        if gpus.age_s is not None:
            age.add_metric([host], gpus.age_s)
        for g in gpus.gpus:
            key = [host, str(g.index)]
            for family, value, scale in (
                (util, g.util_pct, 0.01), (power, g.power_w, 1.0),
                (limit, g.power_limit_w, 1.0), (used, g.mem_used_mib, MIB),
                (total, g.mem_total_mib, MIB), (temp, g.temp_c, 1.0),
            ):
                if value is not None:
                    family.add_metric(key, value * scale)
            throttled.add_metric(key, 1.0 if g.throttle_reasons else 0.0)
            for word in g.throttle_reasons:
                reason.add_metric([*key, sanitize(word)], 1.0)
            if g.xid_count is not None:
                xid.add_metric(key, g.xid_count)
    yield from (count, age, util, power, limit, used, total, temp, throttled, reason, xid)


def _server(hosts: Sequence[HostView]) -> Iterator[Metric]:
    up = _gauge("plateau_server_up", "1 while the host's SGLang server is ready")
    info = InfoMetricFamily("plateau_server", "the server's state, SGLang version and profile",
                            labels=["host"])
    uptime = _gauge("plateau_server_uptime_seconds", "time since the server became ready",
                    unit="seconds")
    gen = _gauge("plateau_server_generation_tokens_per_second",
                 "generated tokens per second now (0 while idle)")
    running = _gauge("plateau_server_running_requests", "requests in the running batch")
    queued = _gauge("plateau_server_queued_requests", "requests waiting in the queue")
    usage = _gauge("plateau_server_kv_cache_usage_ratio", "KV cache token usage (0-1)",
                   unit="ratio")
    graph = _gauge("plateau_server_cuda_graph", "1 when the last decode batch ran a CUDA graph")
    retract = CounterMetricFamily("plateau_server_kv_retractions",
                                  "KV-pool-full retractions seen in the log", labels=["host"])
    for h in hosts:
        s, host = h.summary.server, h.summary.host
        up.add_metric([host], 1.0 if s.state == "ready" else 0.0)
        info.add_metric([host], {"state": s.state, "version": sanitize(s.version or ""),
                                 "profile": sanitize(s.profile or "")})
        if s.uptime_s is not None:
            uptime.add_metric([host], s.uptime_s)
        load = h.summary.load
        if load is None:
            continue
        if load.gen_tok_s is not None or load.idle:
            gen.add_metric([host], load.gen_tok_s or 0.0)
        for family, value in ((running, load.running), (queued, load.queued),
                              (usage, load.token_usage)):
            if value is not None:
                family.add_metric([host], value)
        if load.cuda_graph is not None:
            graph.add_metric([host], 1.0 if load.cuda_graph else 0.0)
        retract.add_metric([host], load.retractions)
    yield from (up, info, uptime, gen, running, queued, usage, graph, retract)


def _sweep(hosts: Sequence[HostView]) -> Iterator[Metric]:
    """A sweep run with --request-rate has its peak and knee on the rate axis: they go to
    `*_request_rate` gauges (requests per second, +Inf for "all at once"), not into the
    `*_concurrency` ones with an axis label, since one metric name holds one unit
    (https://prometheus.io/docs/practices/naming/); a host has one or the other."""
    labels = ("host", "run")
    peak = _gauge("plateau_sweep_peak_tokens_per_second",
                  "the last sweep's best total tokens per second (repeats averaged)", labels)
    peak_at = _gauge("plateau_sweep_peak_concurrency", "the concurrency of that peak", labels)
    peak_rate = _gauge("plateau_sweep_peak_request_rate", "the offered request rate of that "
                       "peak in a --request-rate sweep (requests per second)", labels)
    knee = _gauge("plateau_sweep_knee_concurrency",
                  "where the last sweep's throughput stops scaling", (*labels, "kind"))
    knee_rate = _gauge("plateau_sweep_knee_request_rate", "where the last --request-rate "
                       "sweep's throughput stops scaling (requests per second)",
                       (*labels, "kind"))
    cause = InfoMetricFamily("plateau_sweep_cause", "the last sweep's diagnosed causes, "
                             "rank 1 the strongest", labels=[*labels, "rank"])
    for h in hosts:
        sweep = h.summary.sweep
        if sweep is None or sweep.run_id is None:
            continue
        key = [h.summary.host, sweep.run_id]
        if sweep.peak_tok_s is not None:
            peak.add_metric(key, sweep.peak_tok_s)
        for family, value in ((peak_at, sweep.peak_concurrency),
                              (peak_rate, sweep.peak_request_rate)):
            if value is not None:
                family.add_metric(key, value)
        for family, value in ((knee, sweep.knee_concurrency),
                              (knee_rate, sweep.knee_request_rate)):
            if value is not None:
                family.add_metric([*key, sweep.knee_kind or ""], value)
        for rank, cause_id in enumerate(sweep.causes, 1):
            cause.add_metric([*key, str(rank)], {"cause": cause_id})
    yield from (peak, peak_at, peak_rate, knee, knee_rate, cause)


def _ab(hosts: Sequence[HostView]) -> Iterator[Metric]:
    labels = ("host", "pair")
    info = InfoMetricFamily("plateau_ab", "the host's last A/B: its profiles and the knee "
                            "verdict (real, within noise, noise unknown)", labels=list(labels))
    delta = _gauge("plateau_ab_knee_delta_ratio", "B against A at the knee (0.05 = 5% better)",
                   labels, "ratio")
    width = _gauge("plateau_ab_knee_half_width_ratio", "the confidence interval's half width "
                   "of that delta", labels, "ratio")
    for h in hosts:
        ab = h.ab
        if ab is None:
            continue
        key = [h.summary.host, str(ab.pair_id)]
        info.add_metric(key, {"a": sanitize(ab.name_a), "b": sanitize(ab.name_b),
                              "verdict": ab.word, "metric": ab.metric,
                              "run_a": str(ab.run_a), "run_b": str(ab.run_b)})
        if ab.knee_delta_pct is not None:
            delta.add_metric(key, ab.knee_delta_pct / 100.0)
        if ab.knee_half_width_pct is not None:
            width.add_metric(key, ab.knee_half_width_pct / 100.0)
    yield from (info, delta, width)


def _alerts(hosts: Sequence[HostView]) -> Iterator[Metric]:
    active = _gauge("plateau_alert_active", "1 while the alert holds (console/fleet/summary.py)",
                    ("host", "alert"))
    for h in hosts:
        on = {a.id for a in h.summary.alerts}
        for alert_id in ALERT_IDS:
            active.add_metric([h.summary.host, alert_id], 1.0 if alert_id in on else 0.0)
    yield active


def _cost(hosts: Sequence[HostView]) -> Iterator[Metric]:
    events = CounterMetricFamily("plateau_observer_events", "what the host's observers "
                                 "delivered, by kind (rate() is samples per second)",
                                 labels=["host", "kind"])
    agent = CounterMetricFamily("plateau_gpu_agent_cpu_seconds",
                                "the GPU agent's CPU time on the host", labels=["host"],
                                unit="seconds")
    cost = _gauge("plateau_gpu_agent_sample_duration_seconds",
                  "how long the agent's latest sample took", unit="seconds")
    for h in hosts:
        host = h.summary.host
        for kind, n in sorted(h.cost.events.items()):
            events.add_metric([host, kind], n)
        agent.add_metric([host], h.cost.agent_cpu_s)
        if h.cost.sample_cost_s is not None:
            cost.add_metric([host], h.cost.sample_cost_s)
    yield from (events, agent, cost)
