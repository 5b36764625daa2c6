"""Per-concurrency deltas between two runs, with a noise check when repeats exist."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from console.bench.models import StepMetrics, StepResult

# (column label, getter, higher-is-better)
METRICS: tuple[tuple[str, Callable[[StepMetrics], float | None], bool], ...] = (
    ("total tok/s", lambda m: m.total_tok_s, True),
    ("output tok/s", lambda m: m.output_tok_s, True),
    ("req/s", lambda m: m.request_per_s, True),
    ("TTFT p50 ms", lambda m: m.ttft_ms.p50, False),
    ("TTFT p99 ms", lambda m: m.ttft_ms.p99, False),
    ("ITL p50 ms", lambda m: m.itl_ms.p50, False),
    ("TPOT p50 ms", lambda m: m.tpot_ms.p50, False),
    ("E2E p50 ms", lambda m: m.e2e_ms.p50, False),
)
# Figures of the whole step (its energy) or of an SLO; a row says "-" where a run has none.
STEP_METRICS: tuple[tuple[str, Callable[[StepResult], float | None], bool], ...] = (
    ("goodput req/s",
     lambda s: s.metrics.slo.goodput_rps if s.metrics and s.metrics.slo else None, True),
    ("J/out tok", lambda s: s.energy.j_per_output_token if s.energy else None, False),
)


@dataclass(frozen=True)
class Delta:
    metric: str
    a: float | None
    b: float | None
    delta: float | None  # b - a
    pct: float | None  # (b - a) / a * 100
    better: bool | None  # is B better than A on this metric
    within_noise: bool | None  # None when neither run has repeats at this concurrency


@dataclass(frozen=True)
class CompareRow:
    concurrency: int
    deltas: tuple[Delta, ...]

    def get(self, metric: str) -> Delta:
        return next(d for d in self.deltas if d.metric == metric)


@dataclass(frozen=True)
class Comparison:
    label_a: str
    label_b: str
    rows: tuple[CompareRow, ...]
    only_a: tuple[int, ...]  # concurrencies measured only in A
    only_b: tuple[int, ...]


def _by_concurrency(steps: Sequence[StepResult]) -> dict[int, list[StepResult]]:
    grouped: dict[int, list[StepResult]] = defaultdict(list)
    for step in steps:
        if step.status == "ok" and step.metrics is not None:
            grouped[step.concurrency].append(step)
    return grouped


def _getters() -> list[tuple[str, Callable[[StepResult], float | None], bool]]:
    def of_metrics(get: Callable[[StepMetrics], float | None]
                   ) -> Callable[[StepResult], float | None]:
        return lambda s: get(s.metrics) if s.metrics is not None else None

    return [(n, of_metrics(g), h) for n, g, h in METRICS] + list(STEP_METRICS)


def _values(steps: list[StepResult], get: Callable[[StepResult], float | None]) -> list[float]:
    return [v for v in (get(s) for s in steps) if v is not None and math.isfinite(v)]


def _noise(values_a: list[float], values_b: list[float]) -> float | None:
    """Run-to-run noise: 2 x the larger sample standard deviation of the two sides (None
    when no side has two repeats)."""
    spreads = [statistics.stdev(v) for v in (values_a, values_b) if len(v) >= 2]
    return 2 * max(spreads) if spreads else None


def compare_runs(
    steps_a: Sequence[StepResult],
    steps_b: Sequence[StepResult],
    *,
    label_a: str = "A",
    label_b: str = "B",
) -> Comparison:
    a, b = _by_concurrency(steps_a), _by_concurrency(steps_b)
    rows = []
    for concurrency in sorted(set(a) & set(b)):
        deltas = []
        for name, get, higher_better in _getters():
            va, vb = _values(a[concurrency], get), _values(b[concurrency], get)
            mean_a = statistics.fmean(va) if va else None
            mean_b = statistics.fmean(vb) if vb else None
            if mean_a is None or mean_b is None:
                deltas.append(Delta(name, mean_a, mean_b, None, None, None, None))
                continue
            diff = mean_b - mean_a
            pct = diff / mean_a * 100 if mean_a else None
            noise = _noise(va, vb)
            deltas.append(
                Delta(
                    name,
                    mean_a,
                    mean_b,
                    diff,
                    pct,
                    (diff > 0) == higher_better if diff else None,
                    abs(diff) <= noise if noise is not None else None,
                )
            )
        rows.append(CompareRow(concurrency, tuple(deltas)))
    return Comparison(
        label_a,
        label_b,
        tuple(rows),
        tuple(sorted(set(a) - set(b))),
        tuple(sorted(set(b) - set(a))),
    )
