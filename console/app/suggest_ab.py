"""What a cause's one-key A/B measures: the levels where the cause acts, with the run's own
workload, and the sentence that says so in the A/B dialog.

A cause acts above the knee (console.diagnose._late looks at the knee's step and those above
it) and its effect was measured at `suggest.at_concurrency`; testing the preset's low levels
(1,4,16 under a CUDA-graph ceiling of 64) can only find "no difference" (issue 26, item 2).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from console.config_models import SweepPreset

# The workload fields of a stored run's spec that an A/B repeats; levels come from the cause
# and repeats from the dialog.
_NOT_WORKLOAD = ("concurrency", "repeats")


@dataclass(frozen=True)
class CauseAB:
    """The levels, the run's workload (None: the preset's) and why, for the A/B dialog."""

    levels: tuple[int, ...]
    workload: SweepPreset | None
    preset_name: str  # what the dialog lists the run's workload as
    note: str


def cause_levels(
    at: int | None, knee_kind: str, knee_at: int | None, knee_next: int | None,
    run_levels: Sequence[int],
) -> tuple[int, ...]:
    """The run's levels from the knee up to where the cause was measured (both included),
    at least two when the run has two: the cause's level and its neighbour below, else above.
    With no knee and no measured level, the run's two highest levels (where it plateaus)."""
    levels = sorted(set(run_levels) | ({at} if at else set()))
    if not levels:
        return ()
    has_knee = knee_kind in ("saturates", "declines") and knee_at is not None
    ends = [x for x in (at, knee_at if has_knee else None, knee_next if has_knee else None)
            if x is not None]
    if not ends:
        return tuple(levels[-2:])
    low, high = min(ends), max(ends)
    chosen = [c for c in levels if low <= c <= high]
    if len(chosen) < 2:
        below = [c for c in levels if c < min(chosen)]
        above = [c for c in levels if c > max(chosen)]
        if below:
            chosen.insert(0, below[-1])
        elif above:
            chosen.append(above[0])
    return tuple(chosen)


def run_workload(spec: dict[str, Any]) -> SweepPreset | None:
    """The stored run's workload as a preset (None when the run stored none or it no longer
    validates, e.g. written by another version)."""
    fields = {k: v for k, v in spec.items() if k not in _NOT_WORKLOAD}
    if not fields:
        return None
    try:
        return SweepPreset.model_validate(fields)
    except ValidationError:
        return None


def plan_cause_ab(cause: Any, knee: Any, run: Any) -> CauseAB:
    """`cause` a console.diagnose Cause, `knee` its Diagnosis's KneeInfo, `run` the diagnosed
    RunRecord (None: no run, then the dialog keeps the preset's levels)."""
    at = cause.suggest.at_concurrency
    gain = cause.suggest.gain_pct
    run_levels = [s.concurrency for s in getattr(run, "steps", ()) if s.status == "ok"]
    levels = cause_levels(at, knee.kind, knee.concurrency, knee.next_concurrency, run_levels)
    workload = run_workload(run.summary.meta.spec) if run is not None else None
    name = f"run {run.id}" if run is not None else ""
    where = []
    if knee.kind in ("saturates", "declines") and knee.concurrency is not None:
        where.append(f"the knee at {knee.concurrency}")
    if at:
        predicted = f", predicted {gain:+.0f}%" if gain is not None else ""
        where.append(f"where {cause.id} was measured ({at}{predicted})")
    said = ",".join(str(c) for c in levels)
    note = f"levels {said}: " + (" to ".join(where) if where else "the run's highest levels")
    if workload is not None:
        note += (f"; workload of {name} (in {workload.input_len}, out {workload.output_len}, "
                 f"{workload.prompts_per_concurrency} prompts/level)")
    return CauseAB(levels, workload, name if workload is not None else "", note)
