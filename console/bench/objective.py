"""What a tuner or the diagnosis maximises, read off one step.

    objective_value(step, "goodput")        # requests/s meeting the sweep's SLO
    objective_value(step, "tok-per-joule")  # output tokens per joule over the steady window
    objective_value(step, "throughput")     # headline total tok/s

None when the step cannot say (no SLO given, no GPU power sampled, a failed step): a tuner
then falls back to throughput or skips the point, it never reads a missing value as zero.
"""

from __future__ import annotations

from typing import Literal

from console.bench.models import StepMetrics, StepResult

Objective = Literal["throughput", "goodput", "tok-per-joule"]
OBJECTIVES: tuple[Objective, ...] = ("throughput", "goodput", "tok-per-joule")
UNITS = {"throughput": "tok/s", "goodput": "req/s", "tok-per-joule": "tok/J"}


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
