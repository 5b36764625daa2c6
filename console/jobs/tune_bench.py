"""Where the tuner's work happens: validate a change, restart into a profile, sweep it,
diagnose a stored run. `TuneBench` is the protocol; `HostBench` does it on a host through the
server lifecycle (console.server.lifecycle), the sweep job (console.jobs.sweep) and the run
store, exactly as `plateau ab` does. A test bench can run the simulator on a virtual clock
(tests/support/virtual_bench.py) behind the same protocol.

A candidate that does not start, or whose server dies during a sweep (a NaN, an OOM), is a
`CandidateFailed` with the reason read from its log; the tuner reverts it.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from console.bench.models import StepResult, SweepEvent
from console.config_models import ServerProfile, SweepPreset
from console.diagnose.diagnose import diagnose_stored
from console.diagnose.models import Diagnosis
from console.diagnose.sources import EvidenceSources
from console.errors import PlateauError
from console.jobs.ab import EvidenceFor
from console.jobs.sweep import DEFAULT_OPTIONS, EngineOptions, sweep
from console.jobs.target import on_host
from console.jobs.tune_models import Change, apply
from console.server.flags import FlagSchema
from console.server.lease import host_lease
from console.server.lifecycle import LifecycleError, ServerLifecycle
from console.server.profile_edit import apply_changes
from console.sglang.crash import exception_line
from console.store.db import RunStore

CRASH_TAIL_BYTES = 65536


class CandidateFailed(PlateauError):
    """The profile did not start, or its server died while it was measured."""


@dataclass(frozen=True)
class SweepOutcome:
    run_id: int | None
    steps: tuple[StepResult, ...]


SweepListener = Callable[[SweepEvent], None]


class TuneBench(Protocol):
    host_name: str
    on_sweep_event: SweepListener | None
    """Sees each event of its sweeps as a console sweep's are seen (console.bench.models: the
    console's chart draws the tune's current sweep from them); None: nobody."""

    def lease(self, purpose: str) -> contextlib.AbstractAsyncContextManager[object]: ...

    async def check(self, base: ServerProfile, change: Change
                    ) -> tuple[ServerProfile | None, list[str]]:
        """`base` with `change`, validated as the flags editor validates; (profile, problems):
        no profile when a problem forbids it."""
        ...

    async def restart(self, name: str, profile: ServerProfile, launch: str) -> None:
        """Stop what runs, start `profile`, wait until ready; CandidateFailed if it does not.
        `launch` names the launch within the tune (a test bench seeds its noise with it)."""
        ...

    async def sweep(self, name: str, profile: ServerProfile, spec: SweepPreset, *,
                    label: str, run_id: int | None, repeat_base: int,
                    finish: bool) -> SweepOutcome:
        """Sweep the running server, each step stored (appended to `run_id` when given);
        CandidateFailed when its server died."""
        ...

    def diagnose(self, run_id: int | None, steps: Sequence[StepResult]) -> Diagnosis: ...


def known_bad_problems(warnings: Sequence[object]) -> list[str]:
    """A known-bad combination only warns an operator; an unattended search does not try it."""
    return [str(w) for w in warnings if "known-bad" in str(w)]


def check_change(base: ServerProfile, change: Change, schema: FlagSchema | None
                 ) -> tuple[ServerProfile | None, list[str]]:
    """`base` with `change`, checked as the flags editor checks a profile (the host's
    `--help` schema, value types and choices, known-bad combinations)."""
    try:
        profile, report = apply_changes(base, change.flags, change.env, schema)
    except ValueError as exc:
        return None, [str(exc).splitlines()[0] if str(exc) else type(exc).__name__]
    problems = [str(i) for i in report.errors] + known_bad_problems(report.warnings)
    return (None if problems else profile), problems


class HostBench:
    """The tuner's work on a real (or demo) host. `evidence`: where a sweep's diagnosis
    evidence comes from, given the launch record of the server it measures (the console: tees
    of its session's own observers, as its sweeps and A/Bs use); None: standalone observers
    (the CLI)."""

    def __init__(self, lifecycle: ServerLifecycle, store: RunStore | None, *,
                 options: EngineOptions = DEFAULT_OPTIONS,
                 evidence: EvidenceFor | None = None) -> None:
        self.lifecycle = lifecycle
        self.store = store
        self.options = options
        self.evidence = evidence
        self.host_name = lifecycle.host.name
        self.on_sweep_event: SweepListener | None = None

    def lease(self, purpose: str) -> contextlib.AbstractAsyncContextManager[object]:
        return host_lease(self.host_name).hold(purpose, transport=self.lifecycle.transport,
                                               host=self.lifecycle.host)

    async def check(self, base: ServerProfile, change: Change
                    ) -> tuple[ServerProfile | None, list[str]]:
        try:
            schema = await self.lifecycle.discovery.schema_for(base)
        except PlateauError as exc:
            return None, [f"cannot read the host's flags: {str(exc).splitlines()[0]}"]
        return check_change(base, change, schema)

    async def restart(self, name: str, profile: ServerProfile, launch: str) -> None:
        try:
            await self.lifecycle.restart(name, profile)
        except LifecycleError as exc:
            said = exception_line(list(exc.log_lines))
            raise CandidateFailed(f"did not start: {said or str(exc).splitlines()[0]}") from None

    async def sweep(self, name: str, profile: ServerProfile, spec: SweepPreset, *,
                    label: str, run_id: int | None, repeat_base: int,
                    finish: bool) -> SweepOutcome:
        async with contextlib.AsyncExitStack() as stack:
            sources = await self._evidence(stack)
            target = await stack.enter_async_context(
                on_host(self.lifecycle.transport, self.lifecycle.host, name, profile))
            finished = await sweep(target, spec, store=self.store, label=label,
                                   on_event=self.on_sweep_event,
                                   options=self.options, run_id=run_id,
                                   repeat_base=repeat_base, finish=finish, evidence=sources)
        steps = tuple(finished.steps)
        if any(s.status != "ok" for s in steps) and not await self._alive():
            raise CandidateFailed(f"crashed during the sweep: {await self._crash_line()}")
        return SweepOutcome(finished.run_id, steps)

    async def _evidence(self, stack: contextlib.AsyncExitStack) -> EvidenceSources | None:
        """The session's tees for the running server, or None: the sweep's own observers."""
        if self.evidence is None:
            return None
        record = await self.lifecycle.read_record()
        if record is None:
            return None
        return await stack.enter_async_context(self.evidence(record))

    async def _alive(self) -> bool:
        status = await self.lifecycle.status()
        return status.running and status.health == "ready"

    async def _crash_line(self) -> str:
        with contextlib.suppress(Exception):
            record = await self.lifecycle.read_record()
            if record is not None and record.log_path:
                lines = await self.lifecycle.read_log_tail(record.log_path, CRASH_TAIL_BYTES)
                said = exception_line(lines)
                if said:
                    return said
        return "the server is gone (no exception in its log)"

    def diagnose(self, run_id: int | None, steps: Sequence[StepResult]) -> Diagnosis:
        return diagnose_stored(self.store, run_id, steps)


@contextlib.asynccontextmanager
async def nothing_held() -> AsyncIterator[object]:
    yield None


__all__ = [
    "CandidateFailed",
    "HostBench",
    "SweepListener",
    "SweepOutcome",
    "TuneBench",
    "apply",
    "check_change",
    "known_bad_problems",
    "nothing_held",
]
