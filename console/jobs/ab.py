"""A/B between two launch profiles: restart into A, sweep, restart into B, sweep, compare.

Public API (used by `plateau ab` and the console's A/B screen through the session):
- `run_ab(lifecycle, (name_a, profile_a), (name_b, profile_b), sweep, ...) -> ABResult`:
  the whole job. Both profiles are validated before anything is stopped. It holds the host's
  lease, so no other restart or sweep can interleave; the inner restarts and sweeps re-enter it.
- `SweepFn`: how a profile is swept once it runs (a callable, so the console passes its own
  store/engine/progress and tests a small one); `profile_sweep` builds the usual one
  (console.jobs.sweep against the profile's server).
- `ABProgress` (stage + message) for progress, `ABResult` for the outcome, `noise_note` and
  `delta_table` to judge and print it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from console.bench.compare import Comparison, compare_runs
from console.bench.models import StepResult, SweepEvent
from console.config_models import ServerProfile, SweepPreset
from console.jobs.sweep import DEFAULT_OPTIONS, EngineOptions, sweep
from console.jobs.target import on_host
from console.server.events import EventSink, LifecycleDone, LifecycleEvent, Phase, ignore_events
from console.server.lease import host_lease
from console.server.lifecycle import LifecycleError, ServerLifecycle
from console.server.records import LaunchRecord
from console.store.db import RunStore

ABStage = Literal["validate", "restart-a", "sweep-a", "restart-b", "sweep-b", "compare", "done"]
SweepFn = Callable[[str, ServerProfile, LaunchRecord], Awaitable[Sequence[StepResult]]]
"""(profile name, profile, launch record) -> the sweep's step results."""


@dataclass(frozen=True)
class ABProgress:
    stage: ABStage
    message: str = ""


@dataclass(frozen=True)
class ABResult:
    name_a: str
    name_b: str
    record_a: LaunchRecord
    record_b: LaunchRecord
    steps_a: tuple[StepResult, ...]
    steps_b: tuple[StepResult, ...]
    comparison: Comparison
    note: str
    metric: str = "total tok/s"
    restart_timings: dict[str, dict[str, float]] = field(default_factory=dict)

    def series(self) -> dict[str, list[tuple[int, float]]]:
        """Per label, (concurrency, mean metric) points for the overlay chart."""
        out: dict[str, list[tuple[int, float]]] = {}
        for row in self.comparison.rows:
            delta = row.get(self.metric)
            if delta.a is not None:
                out.setdefault(self.name_a, []).append((row.concurrency, delta.a))
            if delta.b is not None:
                out.setdefault(self.name_b, []).append((row.concurrency, delta.b))
        return out


def noise_note(comparison: Comparison, metric: str = "total tok/s", repeats: int = 1) -> str:
    """One sentence on whether the differences are larger than run-to-run noise."""
    deltas = [row.get(metric) for row in comparison.rows]
    judged = [d for d in deltas if d.within_noise is not None]
    if not comparison.rows:
        return "no concurrency was measured in both runs"
    if not judged:
        return (
            f"single run per step (repeats={repeats}): run-to-run noise is unknown; "
            "set repeats >= 2 in the sweep preset to judge small differences"
        )
    within = [
        str(r.concurrency)
        for r, d in zip(comparison.rows, deltas, strict=True)
        if d.within_noise
    ]
    if not within:
        return f"every {metric} difference is larger than run-to-run noise (2 sigma)"
    return (
        f"{metric} difference within run-to-run noise (2 sigma of repeats) at concurrency "
        + ", ".join(within)
    )


def delta_table(result: ABResult, metric: str | None = None) -> list[tuple[str, ...]]:
    """Rows for a plain table: concurrency, A, B, delta, delta %, noise mark."""
    metric = metric or result.metric
    rows: list[tuple[str, ...]] = [
        ("concurrency", result.name_a, result.name_b, "delta", "delta %", "")
    ]
    for row in result.comparison.rows:
        d = row.get(metric)
        rows.append(
            (
                str(row.concurrency),
                _num(d.a),
                _num(d.b),
                _num(d.delta, signed=True),
                f"{d.pct:+.1f}%" if d.pct is not None else "-",
                "~noise" if d.within_noise else "",
            )
        )
    return rows


def _num(value: float | None, *, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.1f}" if signed else f"{value:.1f}"


async def run_ab(
    lifecycle: ServerLifecycle,
    a: tuple[str, ServerProfile],
    b: tuple[str, ServerProfile],
    sweep: SweepFn,
    *,
    on_progress: Callable[[ABProgress], None] = lambda _p: None,
    on_event: EventSink = ignore_events,
    repeats: int = 1,
    wait: bool = False,
) -> ABResult:
    (name_a, profile_a), (name_b, profile_b) = a, b
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
        timings: dict[str, dict[str, float]] = {}

        def collect(label: str) -> EventSink:
            def sink(event: LifecycleEvent) -> None:
                if isinstance(event, LifecycleDone):
                    timings[label] = event.timings
                on_event(event)

            return sink

        on_progress(ABProgress("restart-a", f"restarting into {name_a}"))
        record_a = await lifecycle.restart(name_a, profile_a, collect(name_a))
        on_progress(ABProgress("sweep-a", f"sweeping {name_a}"))
        steps_a = tuple(await sweep(name_a, profile_a, record_a))
        on_progress(ABProgress("restart-b", f"restarting into {name_b}"))
        record_b = await lifecycle.restart(name_b, profile_b, collect(name_b))
        on_progress(ABProgress("sweep-b", f"sweeping {name_b}"))
        steps_b = tuple(await sweep(name_b, profile_b, record_b))
        on_progress(ABProgress("compare"))
        comparison = compare_runs(steps_a, steps_b, label_a=name_a, label_b=name_b)
        result = ABResult(
            name_a=name_a,
            name_b=name_b,
            record_a=record_a,
            record_b=record_b,
            steps_a=steps_a,
            steps_b=steps_b,
            comparison=comparison,
            note=noise_note(comparison, repeats=repeats),
            restart_timings=timings,
        )
        on_progress(ABProgress("done", result.note))
        return result


def profile_sweep(
    lifecycle: ServerLifecycle,
    preset: SweepPreset,
    *,
    store: RunStore | None = None,
    on_sweep_event: Callable[[SweepEvent], None] | None = None,
    label_for: Callable[[str], str] = lambda name: f"A/B {name}",
    options: EngineOptions = DEFAULT_OPTIONS,
) -> SweepFn:
    """The usual SweepFn: console.jobs.sweep against the profile's server on the lifecycle's
    host (port forward, the preset's engine, API key, each step stored)."""

    async def sweep_one(
        name: str, profile: ServerProfile, record: LaunchRecord
    ) -> list[StepResult]:
        async with on_host(lifecycle.transport, lifecycle.host, name, profile) as target:
            finished = await sweep(
                target,
                preset,
                store=store,
                label=label_for(name),
                on_event=on_sweep_event,
                options=options,
            )
        return list(finished.steps)

    return sweep_one
