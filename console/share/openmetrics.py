"""A run's results as OpenMetrics text, for node_exporter's textfile collector or a
Pushgateway: one gauge family per figure, one sample per step, labelled with the run and the
step. No timestamps: neither the textfile collector nor the Pushgateway accepts them.

The text is produced by prometheus_client's own OpenMetrics exposition (label escaping and
`# EOF` as the format wants) from a collector over the stored run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.openmetrics.exposition import generate_latest
from prometheus_client.registry import Collector, CollectorRegistry

from console.bench.knee import knee_of_steps
from console.bench.models import StepMetrics
from console.store.models import RunRecord
from console.text import sanitize

PREFIX = "plateau_step_"
_MS = 0.001  # latencies are exported in seconds, the base unit OpenMetrics asks for
# (name, help, value)
FIGURES: tuple[tuple[str, str, Callable[[StepMetrics], float | None]], ...] = (
    ("total_tokens_per_second", "prompt + generated tokens per second (steady state "
     "where reached)", lambda m: m.headline_total_tok_s()),
    ("output_tokens_per_second", "generated tokens per second (steady state where "
     "reached)", lambda m: m.headline_output_tok_s()),
    ("requests_per_second", "completed requests per second", lambda m: m.request_per_s),
    ("completed_requests", "requests completed in the step", lambda m: m.completed),
    ("failed_requests", "requests that failed in the step", lambda m: m.errors),
    ("measured_concurrency", "requests in flight on average (Little's law)",
     lambda m: m.measured_concurrency),
)
PERCENTILES: tuple[tuple[str, str, Callable[[StepMetrics], object]], ...] = (
    ("ttft_seconds", "time to first token", lambda m: m.ttft_ms),
    ("itl_seconds", "inter-token latency", lambda m: m.itl_ms),
    ("tpot_seconds", "time per output token", lambda m: m.tpot_ms),
    ("e2e_seconds", "end-to-end request latency", lambda m: m.e2e_ms),
)


def _labels(run: RunRecord) -> dict[str, str]:
    meta = run.summary.meta
    return {"run": str(run.id), "label": sanitize(run.label), "host": sanitize(meta.host),
            "profile": sanitize(meta.profile), "sglang_version": sanitize(meta.server_version)}


class RunCollector(Collector):
    def __init__(self, run: RunRecord) -> None:
        self.run = run

    def collect(self) -> Iterator[Metric]:
        base = _labels(self.run)
        names = [*base, "concurrency", "repeat"]
        ok = [s for s in self.run.steps if s.status == "ok" and s.metrics is not None]
        for name, help_text, get in FIGURES:
            family = GaugeMetricFamily(PREFIX + name, help_text, labels=names)
            for step in ok:
                assert step.metrics is not None
                value = get(step.metrics)
                if value is not None:
                    family.add_metric([*base.values(), str(step.concurrency), str(step.repeat)],
                                      float(value))
            yield family
        for name, help_text, get_dist in PERCENTILES:
            family = GaugeMetricFamily(PREFIX + name, f"{help_text}, by percentile",
                                       labels=[*names, "percentile"], unit="seconds")
            for step in ok:
                assert step.metrics is not None
                dist = get_dist(step.metrics)
                for pct in ("p50", "p90", "p99"):
                    value = getattr(dist, pct, None)
                    if value is not None:
                        family.add_metric([*base.values(), str(step.concurrency),
                                           str(step.repeat), pct[1:]], value * _MS)
            yield family
        knee = knee_of_steps(self.run.steps)
        family = GaugeMetricFamily("plateau_run_knee_concurrency",
                                   "concurrency where total throughput stops scaling",
                                   labels=[*base, "kind"])
        if knee.concurrency is not None:
            family.add_metric([*base.values(), knee.kind], float(knee.concurrency))
        yield family


def to_openmetrics(run: RunRecord) -> str:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(RunCollector(run))
    # prometheus_client's OpenMetrics module has no annotations (pyproject.toml's
    # untyped_calls_exclude names it)
    text: bytes = generate_latest(registry)
    return text.decode("utf-8")
