"""A/B between two launch profiles: repeats of each side, interleaved or not, and a verdict.

Public API (used by `plateau ab` and the console's A/B dialog through the session):
- `run_ab(lifecycle, (name_a, profile_a), (name_b, profile_b), sweep, repeats=3,
  interleave=False, store=...) -> ABResult`: the whole job. Both profiles are validated before
  anything is stopped. It holds the host's lease, so no other restart or sweep can
  interleave; the inner restarts and sweeps re-enter it. Interleaved, the passes go
  A B A B ... with a restart before each (console.bench.abplan says why); otherwise one
  restart per side and all of its repeats in one sweep.
- `SweepFn`: how a profile is swept for one pass once it runs (a callable, so the console
  passes its own store/progress and tests a small one); `profile_sweep` builds the usual one
  (console.jobs.sweep against the profile's server). Each side's repeats go to one stored run
  (appended pass by pass), so `plateau compare RUN_A RUN_B` judges the same repeats.
- `ABProgress` (stage + message) for progress; `ABResult` for the outcome: the steps, the
  verdict (console.bench.verdict), the flags that differ, the stored runs and pair.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import replace

from console.bench.abplan import Pass, order_text, plan_passes
from console.bench.bootfloor import BootFloor, measure_floor
from console.bench.compare import compare_runs
from console.bench.models import StepResult, SweepEvent
from console.bench.verdict import differing_settings, judge
from console.config_models import ServerProfile, SweepPreset
from console.diagnose.sources import EvidenceSources
from console.errors import PlateauError
from console.jobs.ab_models import ABProgress, ABRequest, ABResult, ABStage
from console.jobs.ab_passes import PassResult, SidePass, run_passes
from console.jobs.sweep import DEFAULT_OPTIONS, EngineOptions, sweep
from console.jobs.target import on_host
from console.jobs.upgrade import SideFacts, launched
from console.server.events import EventSink, LifecycleDone, LifecycleEvent, Phase, ignore_events
from console.server.lease import host_lease
from console.server.lifecycle import LifecycleError, ServerLifecycle
from console.server.records import LaunchRecord
from console.server.validate import check_safety
from console.store.db import RunStore

SweepFn = Callable[[str, ServerProfile, LaunchRecord, SidePass], Awaitable[PassResult]]
"""(profile name, profile, launch record, the pass) -> the pass's stored run and steps."""

EvidenceFor = Callable[[LaunchRecord], AbstractAsyncContextManager[EvidenceSources]]
"""A pass's evidence sources, given the launch record of the server it measures (the console:
tees of its session's own observers; console.session.evidence_taps)."""


def delta_table(result: ABResult) -> list[tuple[str, ...]]:
    """Rows for a plain table: concurrency, A, B, delta % with its interval, the word."""
    rows: list[tuple[str, ...]] = [
        ("concurrency", result.name_a, result.name_b, "delta % (95% CI)", "verdict")
    ]
    for p in result.verdict.points:
        rows.append((str(p.concurrency), f"{p.mean_a:.1f}", f"{p.mean_b:.1f}", p.interval,
                     p.word))
    return rows


def _verdict_record(result: ABResult, preset: str) -> dict[str, object]:
    """What is stored with the pair: the verdict as judged, and how it was run."""
    return {
        "verdict": result.verdict.model_dump(mode="json"),
        "sentence": result.verdict.sentence,
        "name_a": result.name_a,
        "name_b": result.name_b,
        "repeats": result.repeats,
        "interleaved": result.interleave,
        "preset": preset,
        "flags": [list(f) for f in result.flags],
    }


async def run_ab(
    lifecycle: ServerLifecycle,
    a: tuple[str, ServerProfile],
    b: tuple[str, ServerProfile],
    sweep: SweepFn,
    *,
    on_progress: Callable[[ABProgress], None] = lambda _p: None,
    on_event: EventSink = ignore_events,
    repeats: int = 3,
    interleave: bool = False,
    store: RunStore | None = None,
    preset: str = "",
    wait: bool = False,
    aa: bool = False,
) -> ABResult:
    """`aa`: an A/A on fresh boots (the same profile on both sides, interleaved): its
    result carries the boot-to-boot floor it measured, stored for later verdicts. Otherwise
    the verdict reads the stored floor of A's host+profile+version (console.bench.bootfloor)."""
    name_a, name_b = a[0], b[0]
    interleave = interleave or aa  # an A/A's floor is between boots: one per pass
    sides = {"A": a, "B": b}
    lease = host_lease(lifecycle.host.name)
    async with lease.hold(f"A/B {name_a} vs {name_b}", wait=wait,
                          transport=lifecycle.transport, host=lifecycle.host):
        on_progress(ABProgress("validate", "checking both profiles before stopping anything"))
        for name, profile in (a, b):
            report = await lifecycle.validate(profile)
            if not report.ok:
                raise LifecycleError(
                    Phase.VALIDATE,
                    f"profile {name!r} is invalid (nothing was stopped): "
                    + "; ".join(str(i) for i in report.errors),
                )
        launches = {side: await _launched(lifecycle, profile)
                    for side, (_name, profile) in sides.items()}
        timings: dict[str, dict[str, float]] = {}

        def collect(label: str) -> EventSink:
            def sink(event: LifecycleEvent) -> None:
                if isinstance(event, LifecycleDone):
                    timings[label] = event.timings
                on_event(event)

            return sink

        passes = plan_passes(repeats, interleave)
        records: dict[str, LaunchRecord] = {}

        def where(number: int) -> str:
            return f"pass {number}/{len(passes)}: {order_text(passes)}"

        async def restart(number: int, plan: Pass) -> None:
            name, profile = sides[plan.side]
            restart_stage: ABStage = "restart-a" if plan.side == "A" else "restart-b"
            on_progress(ABProgress(restart_stage, f"restarting into {name} ({where(number)})",
                                   name))
            records[plan.side] = await lifecycle.restart(name, profile, collect(name))

        async def sweep_pass(number: int, pass_: SidePass) -> PassResult:
            name, profile = sides[pass_.side]
            sweep_stage: ABStage = "sweep-a" if pass_.side == "A" else "sweep-b"
            on_progress(ABProgress(sweep_stage, _sweep_message(name, pass_, repeats,
                                                               where(number)), name))
            return await sweep(name, profile, records[pass_.side], pass_)

        got = await run_passes(passes, restart=restart, sweep=sweep_pass,
                               interleave=interleave)
        steps, runs = got.steps, got.runs
        on_progress(ABProgress("compare"))
        floor = _floor(store, lifecycle.host.name, name_a, steps, runs, aa=aa)
        facts = {side: SideFacts(_version(store, runs[side]), *launches[side])
                 for side in sides}
        verdict = judge(steps["A"], steps["B"], label_a=name_a, label_b=name_b,
                        interleaved=interleave, floor=None if aa else floor)
        if aa:  # the A/A measures the floor: "unknown, run an A/A" is not for it
            verdict = verdict.model_copy(update={"notes": [
                n for n in verdict.notes if not n.startswith("boot-to-boot floor unknown")]})
        result = ABResult(
            name_a=name_a,
            name_b=name_b,
            record_a=records["A"],
            record_b=records["B"],
            steps_a=tuple(steps["A"]),
            steps_b=tuple(steps["B"]),
            comparison=compare_runs(steps["A"], steps["B"], label_a=name_a, label_b=name_b),
            verdict=verdict,
            flags=tuple(_differences(facts["A"], facts["B"], a[1].env, b[1].env)),
            repeats=repeats,
            interleave=interleave,
            run_a=runs["A"],
            run_b=runs["B"],
            restart_timings=timings,
            floor=floor,
            sides=facts,
        )
        if store is not None and result.run_a is not None and result.run_b is not None:
            pair = store.save_pair(result.run_a, result.run_b, _verdict_record(result, preset))
            result = replace(result, pair_id=pair)
        on_progress(ABProgress("done", result.note))
        return result


async def _launched(lifecycle: ServerLifecycle, profile: ServerProfile
                    ) -> tuple[dict[str, object], tuple[str, ...]]:
    """The profile's flags as its install takes them (console.jobs.upgrade), and the renames;
    as written when the host's flags cannot be read (validation has said why)."""
    if not check_safety(profile).ok:
        return dict(profile.flags), ()
    try:
        return launched(profile, await lifecycle.discovery.schema_for(profile))
    except PlateauError:
        return dict(profile.flags), ()


def _version(store: RunStore | None, run_id: int | None) -> str:
    if store is None or run_id is None:
        return ""
    return store.get_run(run_id).summary.meta.server_version


def _differences(a: SideFacts, b: SideFacts, env_a: Mapping[str, str],
                 env_b: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """The flags as launched and the environment variables that differ, and the SGLang
    versions when they do."""
    rows = differing_settings(a.flags, b.flags, env_a, env_b)
    if a.version != b.version:
        rows.insert(0, ("sglang version", a.version or "-", b.version or "-"))
    return rows


def _floor(store: RunStore | None, host: str, profile: str, steps: dict[str, list[StepResult]],
           runs: dict[str, int | None], *, aa: bool) -> BootFloor | None:
    """An A/A's measured floor (stored when it has a level), else the stored one of A's
    host+profile+version (the server's version as A's run recorded it)."""
    if store is None or runs["A"] is None:
        return None
    version = _version(store, runs["A"])
    if not aa:
        return store.boot_floor(host, profile, version)
    floor = measure_floor(steps["A"], steps["B"], host=host, profile=profile, version=version,
                          measured_at=time.time(), run_a=runs["A"], run_b=runs["B"])
    if floor.levels:
        store.save_floor(floor)
    return floor


def _sweep_message(name: str, plan: SidePass, repeats: int, where: str) -> str:
    if plan.repeats == 1:
        return f"sweeping {name}, repeat {plan.repeat_base + 1}/{repeats} ({where})"
    return f"sweeping {name}, {plan.repeats} repeats ({where})"


def profile_sweep(
    lifecycle: ServerLifecycle,
    preset: SweepPreset,
    *,
    store: RunStore | None = None,
    on_sweep_event: Callable[[SweepEvent], None] | None = None,
    label_for: Callable[[str], str] = lambda name: f"A/B {name}",
    options: EngineOptions = DEFAULT_OPTIONS,
    evidence: EvidenceFor | None = None,
) -> SweepFn:
    """The usual SweepFn: console.jobs.sweep against the profile's server on the lifecycle's
    host (port forward, the preset's engine, API key, each step stored), `pass_.repeats`
    repeats appended to the side's run. Each pass's evidence comes from `evidence` (opened
    for the pass), else from standalone observers of the host (console.jobs.sweep)."""

    async def sweep_one(
        name: str, profile: ServerProfile, record: LaunchRecord, pass_: SidePass
    ) -> PassResult:
        spec = preset.model_copy(update={"repeats": pass_.repeats})
        async with contextlib.AsyncExitStack() as stack:
            sources = None if evidence is None else await stack.enter_async_context(
                evidence(record))
            target = await stack.enter_async_context(
                on_host(lifecycle.transport, lifecycle.host, name, profile))
            finished = await sweep(
                target,
                spec,
                store=store,
                label=label_for(name),
                on_event=on_sweep_event,
                options=options,
                run_id=pass_.run_id,
                repeat_base=pass_.repeat_base,
                finish=pass_.last,
                evidence=sources,
            )
        return PassResult(finished.run_id, tuple(finished.steps))

    return sweep_one


__all__ = [
    "ABProgress",
    "ABRequest",
    "ABResult",
    "PassResult",
    "SidePass",
    "SweepFn",
    "delta_table",
    "profile_sweep",
    "run_ab",
]
