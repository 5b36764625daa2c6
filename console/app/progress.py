"""What the host is busy with, as the header and the sweep panel say it: the A/B stage with its
progress and time left (from the plan the A/B dialog made), the sweep step. Plain functions of
the host's state, below the screens, so the app's contract can name `ABPlan` without importing
a screen (that was an import cycle: contract -> dashboard -> footer -> contract)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from console.session.state import CANCELLED, HostState


def sweep_line(state: HostState) -> str:
    sweep = state.sweep
    if sweep.running:
        conc = f" c={sweep.concurrency}" if sweep.concurrency is not None else ""
        return f"sweep running: step {sweep.step}/{sweep.total}{conc}"
    if sweep.run_id is not None and sweep.last_ok is False:
        if sweep.detail == CANCELLED:  # the operator's x, not a failure (issue 26.11)
            return f"sweep {sweep.run_id} cancelled"
        return f"sweep {sweep.run_id} failed: {sweep.detail}"
    if sweep.run_id is not None:
        return f"sweep {sweep.run_id}: {len(sweep.points)} step(s)"
    return ""


@dataclass(frozen=True)
class ABPlan:
    """What the A/B dialog said before it started: for its progress and time left."""

    estimate_s: float
    total_steps: int
    started: datetime


def ab_eta(state: HostState, plan: ABPlan | None) -> str:
    """`7/18 steps, ~3 min left`: from the steps measured so far once there is one (the
    dialog's estimate before that), so the time left follows what the host really takes."""
    ab = state.ab
    if plan is None or ab is None or not ab.running or plan.total_steps <= 0:
        return ""
    done = min(len(ab.steps_a) + len(ab.steps_b), plan.total_steps)
    elapsed = max(0.0, (state.clock() - plan.started).total_seconds())
    left = (elapsed / done * (plan.total_steps - done) if done
            else max(0.0, plan.estimate_s - elapsed))
    return f"{done}/{plan.total_steps} steps, ~{_duration(left)} left"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def progress_line(state: HostState, plan: ABPlan | None = None) -> str:
    """What the host is busy with (header): the A/B stage (with its progress and time left)
    and/or the sweep step."""
    parts = []
    ab = state.ab
    if ab is not None and ab.running:
        eta = ab_eta(state, plan)
        parts.append(f"A/B {ab.name_a} vs {ab.name_b}: {ab.stage}" + (f" · {eta}" if eta else ""))
    if state.sweep.running:
        parts.append(sweep_line(state))
    return " · ".join(parts)
