"""What a tuner or the diagnosis maximises, read off one step.

    objective_value(step, "goodput")        # requests/s meeting the sweep's SLO
    objective_value(step, "tok-per-joule")  # output tokens per joule over the steady window
    objective_value(step, "throughput")     # headline total tok/s

None when the step cannot say (no SLO given, no GPU power sampled, a failed step): a tuner
then falls back to throughput or skips the point, it never reads a missing value as zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from console.bench.knee import Knee, find_knee
from console.bench.models import StepMetrics, StepResult

Objective = Literal["throughput", "goodput", "tok-per-joule"]
OBJECTIVES: tuple[Objective, ...] = ("throughput", "goodput", "tok-per-joule")
WORDS = {"throughput": "total tok/s", "goodput": "goodput req/s",
         "tok-per-joule": "output tok/J"}


def objective_value(step: StepResult | StepMetrics, objective: Objective) -> float | None:
    """The step's value for `objective` (higher is better for every one)."""
    if isinstance(step, StepResult):
        if step.status != "ok":
            return None
        metrics, energy = step.metrics, step.energy
    else:
        metrics, energy = step, None
    if metrics is None:
        return None
    if objective == "throughput":
        return metrics.headline_total_tok_s()
    if objective == "goodput":
        return metrics.slo.goodput_rps if metrics.slo is not None else None
    if objective == "tok-per-joule":
        return energy.output_tok_per_j if energy is not None else None
    raise ValueError(f"unknown objective {objective!r} (known: {', '.join(OBJECTIVES)})")


def objective_knee(steps: Sequence[StepResult], objective: Objective) -> Knee | None:
    """Where the objective stops growing with concurrency (console/bench/knee.py's rule on the
    objective's values); None when no step has a value (no SLO, no power samples)."""
    points = [(s.concurrency, v) for s in steps
              if (v := objective_value(s, objective)) is not None]
    if not points:
        return None
    if not any(v > 0 for _, v in points):  # e.g. no request met the SLO at any level
        return Knee("insufficient", None, None, None, WORDS[objective],
                    f"{WORDS[objective]} is 0 at every level")
    return find_knee(points, metric=WORDS[objective])
