"""What a tune raises: the objective, one function from a step to a number (higher is better),
named for `--objective`, labelled for tables and verdicts, with the unit the ladder names.

The function takes the whole StepResult: tokens per joule come from the step's energy (the GPU
power sampled during it, console/bench/energy.py), goodput from its metrics' SLO result
(console/bench/slo.py). None when the step cannot say (no SLO given, no power sampled): the
tuner leaves such a step out, it never reads a missing value as zero. The values of goodput and
tokens per joule are console.bench.objective's, so `plateau diagnose --objective` and a tune
read the same number.

Pluggable: a new objective is one more `Objective` in OBJECTIVES; the tuner's values, its
verdicts and its target all go through `value`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from console.bench.models import StepResult
from console.bench.objective import objective_value

ObjectiveFn = Callable[[StepResult], float | None]


@dataclass(frozen=True)
class Objective:
    name: str  # what `--objective` takes
    label: str  # how a table or a verdict names the number ("total tok/s")
    value: ObjectiveFn
    help: str = ""
    unit: str = "tok/s"  # what `--target` and the ladder's values are in
    needs_slo: bool = False  # meaningless without the sweep's SLO (goodput)
    # A level can honestly read 0 (no request met the SLO): kept, not dropped as a failed step.
    zero_is_value: bool = False


def _metrics(step: StepResult) -> bool:
    return step.status == "ok" and step.metrics is not None


def _total(step: StepResult) -> float | None:
    return step.metrics.headline_total_tok_s() if step.metrics is not None else None


def _output(step: StepResult) -> float | None:
    return step.metrics.headline_output_tok_s() if step.metrics is not None else None


def _goodput(step: StepResult) -> float | None:
    return objective_value(step, "goodput") if _metrics(step) else None


def _tok_per_joule(step: StepResult) -> float | None:
    return objective_value(step, "tok-per-joule") if _metrics(step) else None


OBJECTIVES: dict[str, Objective] = {
    o.name: o for o in (
        Objective("total", "total tok/s", _total, "input + output tokens a second"),
        Objective("output", "output tok/s", _output, "output tokens a second"),
        Objective("goodput", "goodput req/s", _goodput,
                  "requests a second meeting the SLO (needs --slo or a preset's slo)",
                  unit="req/s", needs_slo=True, zero_is_value=True),
        Objective("tok-per-joule", "output tok/J", _tok_per_joule,
                  "output tokens per joule of GPU energy (needs GPU power samples)",
                  unit="tok/J"),
    )
}
DEFAULT_OBJECTIVE = "total"


def objective(name: str) -> Objective:
    try:
        return OBJECTIVES[name]
    except KeyError:
        raise ValueError(f"unknown objective {name!r} (known: {', '.join(OBJECTIVES)})") from None


def value_text(value: float, goal: Objective) -> str:
    """A value in the objective's unit, with the precision the unit needs (tok/J is ~1)."""
    digits = 0 if goal.unit == "tok/s" else 3 if goal.unit == "tok/J" else 2
    return f"{value:,.{digits}f} {goal.unit}"


__all__ = ["DEFAULT_OBJECTIVE", "OBJECTIVES", "Objective", "ObjectiveFn", "objective",
           "value_text"]
