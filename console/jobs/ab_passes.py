"""The A/B pass loop, one for `plateau ab` (console.jobs.ab) and `plateau tune`
(console.jobs.tune): restart into a side when its pass needs a launch, sweep it, collect each
side's steps and stored run.

Interleaved, every pass has a server lifetime of its own (console.bench.abplan says why): a
side is restarted before a pass unless it runs already on a launch no pass has measured (the
tuner's last good profile, running when its A/B begins). Not interleaved, one launch per side.
What a restart or a sweep does, and what a progress line says, is the caller's (the A/B job
restarts through the lifecycle; the tuner through its bench, counting restarts).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from console.bench.abplan import Pass, Side
from console.bench.models import StepResult


@dataclass(frozen=True)
class SidePass:
    """One sweep of one side: which repeats it measures and which stored run they join."""

    side: Side
    repeat_base: int
    repeats: int
    run_id: int | None  # the side's run to append to (None: this pass creates it)
    last: bool  # the side's last pass: its run is finished after it


@dataclass(frozen=True)
class PassResult:
    run_id: int | None
    steps: tuple[StepResult, ...]


@dataclass
class Collected:
    """Each side's steps and stored run so far (a side may start with earlier measurements)."""

    steps: dict[str, list[StepResult]] = field(default_factory=lambda: {"A": [], "B": []})
    runs: dict[str, int | None] = field(default_factory=lambda: {"A": None, "B": None})


RestartFn = Callable[[int, Pass], Awaitable[None]]
"""(pass number from 1, the pass) -> the pass's side is running on a fresh launch."""
SweepPassFn = Callable[[int, SidePass], Awaitable[PassResult]]
"""(pass number from 1, the pass with its run) -> the pass's stored run and steps."""


def last_of_side(passes: Sequence[Pass], plan: Pass) -> bool:
    return plan is max((p for p in passes if p.side == plan.side), key=lambda p: p.repeat_base)


async def run_passes(
    passes: Sequence[Pass],
    *,
    restart: RestartFn,
    sweep: SweepPassFn,
    interleave: bool,
    running: Side | None = None,
    collected: Collected | None = None,
    before_pass: Callable[[int, Pass], None] = lambda _n, _p: None,
) -> Collected:
    """Run `passes` in order. `running`: the side already running on an unmeasured launch."""
    out = collected or Collected()
    fresh = running is not None  # the running launch has not been measured yet
    for number, plan in enumerate(passes, 1):
        before_pass(number, plan)
        if running != plan.side or (interleave and not fresh):
            running = None  # whatever ran is being stopped
            await restart(number, plan)
            running = plan.side
        outcome = await sweep(number, SidePass(plan.side, plan.repeat_base, plan.repeats,
                                               out.runs[plan.side], last_of_side(passes, plan)))
        fresh = False
        out.runs[plan.side] = out.runs[plan.side] or outcome.run_id
        out.steps[plan.side].extend(outcome.steps)
    return out


__all__ = ["Collected", "PassResult", "SidePass", "last_of_side", "run_passes"]
