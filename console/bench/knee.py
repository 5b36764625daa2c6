"""Where throughput stops scaling with concurrency, said in words.

The knee is the first concurrency after which one doubling adds less than `threshold`
(10 %) throughput. Steps that are not exactly a doubling apart are normalised to a per-doubling
gain, so 16 -> 64 (two doublings) at +21 % counts as +10 % per doubling.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

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


def _fmt_pct(value: float) -> str:
    return f"{value:+.1f}%".replace("-", "\u2212")


def find_knee(
    points: Iterable[tuple[int, float]],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    metric: str = "total tok/s",
) -> Knee:
    """`points` are (concurrency, throughput); repeats at one concurrency are averaged."""
    grouped: dict[int, list[float]] = defaultdict(list)
    for concurrency, value in points:
        if value is not None and math.isfinite(value):
            grouped[concurrency].append(value)
    curve = sorted((c, sum(v) / len(v)) for c, v in grouped.items() if c > 0)
    if len(curve) < 2:
        return Knee("insufficient", None, None, None, metric, "need two or more steps for a knee")
    for (c1, t1), (c2, t2) in itertools.pairwise(curve):
        if t1 <= 0:
            continue
        gain = t2 / t1 - 1.0
        doublings = math.log2(c2 / c1)
        per_doubling = (t2 / t1) ** (1.0 / doublings) - 1.0 if t2 > 0 else -1.0
        if gain < 0:
            return Knee(
                "declines",
                c1,
                c2,
                gain * 100,
                metric,
                f"peaks at ~{c1}: {_fmt_pct(gain * 100)} from {c1}\u2192{c2} ({metric})",
            )
        if per_doubling < threshold:
            return Knee(
                "saturates",
                c1,
                c2,
                gain * 100,
                metric,
                f"saturates at ~{c1}: {_fmt_pct(gain * 100)} from {c1}\u2192{c2} ({metric})",
            )
    (c1, t1), (c2, t2) = curve[-2], curve[-1]
    gain = (t2 / t1 - 1.0) * 100 if t1 > 0 else 0.0
    return Knee(
        "scaling",
        c2,
        None,
        gain,
        metric,
        f"still scaling at {c2}: {_fmt_pct(gain)} from {c1}\u2192{c2} ({metric})",
    )


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
    points = [(s.concurrency, value) for s in steps
              if (value := step_throughput(s, metric)) is not None]
    return find_knee(points, metric=_steady_label(steps, metric))
