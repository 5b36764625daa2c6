"""Whole interleaved A/Bs on the simulator's virtual clock (tests/support/virtual_bench.py):
the product's pass loop (console.jobs.ab_passes, as `plateau ab --interleave` runs it), a
fresh launch of the sim's Runner and Engine per pass, closed-loop sweeps whose every time is
the simulated GPU's, steps stored in a real run store, the product's verdict.

What tests/support/ab_sim.py does with processes and HTTP, without this machine's speed in
any number: there a loaded machine's late wakeups reached the client's timestamps and widened
the intervals (tests/test_ab_verdict_sim.py missed a 5 % difference under load). Each launch is
seeded from its name (`tag:pass`), so an A/B measures the same every time it runs.
"""

from __future__ import annotations

from pathlib import Path

from console.bench.abplan import Pass, plan_passes
from console.bench.models import StepResult
from console.bench.verdict import Verdict, judge
from console.config_models import FlagValue, ServerProfile, SweepPreset
from console.jobs.ab_passes import PassResult, SidePass, run_passes
from console.store.db import RunStore
from tests.support.ab_sim import LIGHT
from tests.support.virtual_bench import VirtualBench, run_virtual


def light_profile(flags: dict[str, FlagValue]) -> ServerProfile:
    """The light TP8 NVFP4 model of tests/support/ab_sim.py with `flags`."""
    return ServerProfile(launch=["python", "-m", "console.sim"], model_path="test/Example-MoE",
                         port=30000, flags={**LIGHT, **flags})


def virtual_ab(tmp: Path, tag: str, flags_a: dict[str, FlagValue],
               flags_b: dict[str, FlagValue], spec: SweepPreset, repeats: int) -> Verdict:
    """One interleaved A/B (A B A B ..., a launch each) of the light model with each side's
    flags; the verdict on B against A."""
    steps_a, steps_b = virtual_passes(tmp, tag, flags_a, flags_b, spec, repeats)
    return judge(steps_a, steps_b, label_a="a", label_b="b", interleaved=True)


def virtual_passes(tmp: Path, tag: str, flags_a: dict[str, FlagValue],
                   flags_b: dict[str, FlagValue], spec: SweepPreset, repeats: int,
                   *, interleave: bool = True
                   ) -> tuple[list[StepResult], list[StepResult]]:
    """One A/B's passes: interleaved (A B A B ..., a fresh boot each: the repeat of a step
    names its boot), or one boot per side holding all its repeats; each side's steps."""
    tmp.mkdir(parents=True, exist_ok=True)
    store = RunStore(tmp / f"{tag}.sqlite")
    bench = VirtualBench(store, tmp)
    sides = {"A": light_profile(flags_a), "B": light_profile(flags_b)}
    one = spec.model_copy(update={"repeats": 1})
    passes = plan_passes(repeats, interleave)

    async def restart(number: int, p: Pass) -> None:
        await bench.restart(p.side, sides[p.side], f"{tag}:{number}")

    async def sweep(_number: int, p: SidePass) -> PassResult:
        each = one.model_copy(update={"repeats": p.repeats})
        out = await bench.sweep(p.side, sides[p.side], each, label=f"{tag} {p.side}",
                                run_id=p.run_id, repeat_base=p.repeat_base, finish=p.last)
        return PassResult(out.run_id, out.steps)

    async def go() -> tuple[list[StepResult], list[StepResult]]:
        try:
            got = await run_passes(passes, restart=restart, sweep=sweep,
                                   interleave=interleave)
        finally:
            await bench.close()
        assert len(bench.launches) == len(passes)  # a launch per pass
        return got.steps["A"], got.steps["B"]

    try:
        return run_virtual(go())
    finally:
        store.close()
