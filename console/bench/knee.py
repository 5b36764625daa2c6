"""Where throughput stops scaling with concurrency (or with the offered request rate), said in
words.

The knee is the first level after which one doubling adds less than `threshold` (10 %)
throughput. Steps that are not exactly a doubling apart are normalised to a per-doubling
gain, so 16 -> 64 (two doublings) at +21 % counts as +10 % per doubling. In a request-rate
sweep the level is the rate, and `inf` (everything at once) counts as one doubling past the
largest finite rate.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from console.bench.models import StepResult

DEFAULT_THRESHOLD = 0.10


@dataclass(frozen=True)
class Knee:
    kind: Literal["saturates", "declines", "scaling", "insufficient"]
    concurrency: int | None  # where it saturates / peaks / the last point still scaling
    next_concurrency: int | None
    gain_pct: float | None  # throughput change from concurrency to next_concurrency, in %
    metric: str
    sentence: str
    # The same points on the sweep's own axis: the concurrency, or in a request-rate sweep
    # the rate (then `concurrency` and `next_concurrency` are None).
    level: float | None = None
    next_level: float | None = None
    axis: Literal["concurrency", "rate"] = "concurrency"


def _fmt_pct(value: float) -> str:
    return f"{value:+.1f}%".replace("-", "\u2212")


def _label(level: float, axis: str) -> str:
    if axis == "rate":
        return "inf req/s" if math.isinf(level) else f"{level:g} req/s"
    return f"{level:g}"


def _doublings(x1: float, x2: float, finite_top: float) -> float:
    if math.isinf(x2):  # `inf`: one doubling past the largest finite rate
        return math.log2(2 * finite_top / x1) if finite_top > 0 else 1.0
    return math.log2(x2 / x1)


def find_knee(
    points: Iterable[tuple[float, float]],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    metric: str = "total tok/s",
    axis: Literal["concurrency", "rate"] = "concurrency",
) -> Knee:
    """`points` are (level, throughput); repeats at one level are averaged."""
    grouped: dict[float, list[float]] = defaultdict(list)
    for level, value in points:
        if value is not None and math.isfinite(value):
            grouped[level].append(value)
    curve = sorted((c, sum(v) / len(v)) for c, v in grouped.items() if c > 0)
    if len(curve) < 2:
        return Knee("insufficient", None, None, None, metric, "need two or more steps for a knee",
                    axis=axis)
    top = max((c for c, _ in curve if math.isfinite(c)), default=0.0)

    def knee(kind: Any, x1: float, x2: float | None, gain: float, words: str) -> Knee:
        whole = axis == "concurrency"
        return Knee(kind, int(x1) if whole else None,
                    int(x2) if whole and x2 is not None else None, gain, metric, words,
                    level=x1, next_level=x2, axis=axis)

    for (c1, t1), (c2, t2) in itertools.pairwise(curve):
        if t1 <= 0 or math.isinf(c1):
            continue
        gain = t2 / t1 - 1.0
        per_doubling = (t2 / t1) ** (1.0 / _doublings(c1, c2, top)) - 1.0 if t2 > 0 else -1.0
        a, b = _label(c1, axis), _label(c2, axis)
        if gain < 0:
            return knee("declines", c1, c2, gain * 100,
                        f"peaks at ~{a}: {_fmt_pct(gain * 100)} from {a}\u2192{b} ({metric})")
        if per_doubling < threshold:
            return knee("saturates", c1, c2, gain * 100,
                        f"saturates at ~{a}: {_fmt_pct(gain * 100)} from {a}\u2192{b} ({metric})")
    (c1, t1), (c2, t2) = curve[-2], curve[-1]
    gain = (t2 / t1 - 1.0) * 100 if t1 > 0 else 0.0
    a, b = _label(c1, axis), _label(c2, axis)
    return knee("scaling", c2, None, gain,
                f"still scaling at {b}: {_fmt_pct(gain)} from {a}\u2192{b} ({metric})")


def step_level(step: StepResult) -> float:
    """The step's place on the sweep's x axis: its request rate in an open-loop sweep,
    else its concurrency."""
    rate = step.rate
    return float(step.concurrency) if rate is None else rate


def is_rate_sweep(steps: Sequence[StepResult]) -> bool:
    return any(s.rate is not None for s in steps)


def step_throughput(step: StepResult, metric: Literal["total", "output"] = "total"
                    ) -> float | None:
    """The throughput an ok step is judged by: its steady-state window's where it had one,
    else the whole step's (StepMetrics.headline_*). The knee, the verdict, the report's level
    table and the chart all read this one figure, so their percentages agree."""
    m = step.metrics
    if step.status != "ok" or m is None:
        return None
    return m.headline_total_tok_s() if metric == "total" else m.headline_output_tok_s()


def _steady_label(steps: Sequence[StepResult], metric: str) -> str:
    """The metric as the step tables name it: "steady" when the steady-state window was used."""
    ok = [s.metrics for s in steps if s.status == "ok" and s.metrics is not None]
    steady = [m.steady is not None and m.steady.reached for m in ok]
    if ok and all(steady):
        return f"steady {metric} tok/s"
    if any(steady):
        return f"{metric} tok/s, steady where reached"
    return f"{metric} tok/s"


def knee_of_steps(
    steps: Sequence[StepResult], *, metric: Literal["total", "output"] = "total"
) -> Knee:
    points = [(step_level(s), value) for s in steps
              if (value := step_throughput(s, metric)) is not None]
    axis: Literal["concurrency", "rate"] = "rate" if is_rate_sweep(steps) else "concurrency"
    return find_knee(points, metric=_steady_label(steps, metric), axis=axis)
