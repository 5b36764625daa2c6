"""What a tune raises: the objective, one function from a step's metrics to a number (higher is
better), named for `--objective` and labelled for tables and verdicts.

Pluggable: a new objective (goodput under an SLO, tokens per joule: issue 28 leaves them to the
metrics that measure them) is one more `Objective` in OBJECTIVES; the tuner's values, its
verdicts and its target all go through `value`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from console.bench.models import StepMetrics

ObjectiveFn = Callable[[StepMetrics], float]


@dataclass(frozen=True)
class Objective:
    name: str  # what `--objective` takes
    label: str  # how a table or a verdict names the number ("total tok/s")
    value: ObjectiveFn
    help: str = ""


def _total(m: StepMetrics) -> float:
    return m.headline_total_tok_s()


def _output(m: StepMetrics) -> float:
    return m.headline_output_tok_s()


OBJECTIVES: dict[str, Objective] = {
    o.name: o for o in (
        Objective("total", "total tok/s", _total, "input + output tokens a second"),
        Objective("output", "output tok/s", _output, "output tokens a second"),
    )
}
DEFAULT_OBJECTIVE = "total"


def objective(name: str) -> Objective:
    try:
        return OBJECTIVES[name]
    except KeyError:
        raise ValueError(f"unknown objective {name!r} (known: {', '.join(OBJECTIVES)})") from None


__all__ = ["DEFAULT_OBJECTIVE", "OBJECTIVES", "Objective", "ObjectiveFn", "objective"]
