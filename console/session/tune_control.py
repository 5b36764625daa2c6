"""The console's side of `plateau tune` (issue 28): one tune per host, run on the host's
session by the same job as the CLI's (console.jobs.tune.run_tune) with its progress callback
and stop event. Below the app, as a session's sweeps and A/Bs are: the app's intent handlers
(console/app/intents.py: TuneRequested, TuneStopRequested) call `begin_tune` and `stop`.

`TuneControl` holds what the Tune view shows (the job's live state, its phase, how it ended)
and tells its listeners when that changes; `begin_tune` opens the store and the host's bench
and returns the job for the app to run in a worker. The job holds the host's lease (the
bench's, as the CLI's does), so a sweep, restart or A/B of this process is refused while it
runs; `stop()` asks it to end at its next safe point, the last good profile left running. A
tune that kept a change saves it as `profiles.d/<profile>-tuned.toml`, as the CLI does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from console.config_models import PlateauConfig, ServerProfile
from console.errors import PlateauError
from console.jobs.tune_models import TuneProgress, TuneRequest, TuneState
from console.jobs.tune_objective import DEFAULT_OBJECTIVE, OBJECTIVES

if TYPE_CHECKING:
    from console.bench.models import SweepEvent
    from console.jobs.tune_bench import TuneBench
    from console.session.protocol import Session
    from console.store.db import RunStore

Listener = Callable[[], None]
BenchFor = Callable[["Session", "RunStore"], "TuneBench"]
"""(session, store) -> the tune's bench: the session's own (`session_bench`), or a test's."""
TUNE_PRESET_ORDER = ("quick", "default")  # the demo's fast preset first, as the A/B picker


def tune_preset(config: PlateauConfig) -> str:
    return next((p for p in TUNE_PRESET_ORDER if p in config.sweeps), "default")


def tune_objectives(config: PlateauConfig) -> list[str]:
    """The objectives the view's `o` offers: goodput only when the preset has an SLO."""
    spec = config.sweep(tune_preset(config))
    return [name for name, goal in OBJECTIVES.items() if spec.slo is not None
            or not goal.needs_slo]


def tune_request(config: PlateauConfig, host: str, profile: str,
                 objective: str = DEFAULT_OBJECTIVE) -> TuneRequest:
    """What the view's Enter starts: the host's profile at the first preset of
    TUNE_PRESET_ORDER the config has (its SLO with it), the objective chosen with `o`, no
    budget but the stop key."""
    preset = tune_preset(config)
    return TuneRequest(host=host, profile=profile, preset=preset, spec=config.sweep(preset),
                       objective=objective)


@dataclass
class TuneControl:
    host: str
    state: TuneState | None = None
    tune_id: int | None = None
    phase: TuneProgress | None = None
    running: bool = False
    stopping: bool = False
    error: str = ""  # why the job failed (empty when it did not)
    saved: str = ""  # where the tuned profile was written
    objective: str = DEFAULT_OBJECTIVE  # what the next Enter tunes for (`o` cycles it)
    stop_event: asyncio.Event = field(default_factory=asyncio.Event)
    listeners: list[Listener] = field(default_factory=list)

    def changed(self) -> None:
        for listener in list(self.listeners):
            listener()

    def progress(self, p: TuneProgress) -> None:
        self.phase = p
        self.changed()

    def next_objective(self, offered: list[str]) -> str:
        """The objective after the current one among `offered` (the first when it is gone)."""
        at = offered.index(self.objective) if self.objective in offered else -1
        self.objective = offered[(at + 1) % len(offered)]
        self.changed()
        return self.objective

    def stop(self) -> bool:
        """Ask the running tune to stop at its next safe point; False when none runs."""
        if not self.running or self.stopping:
            return False
        self.stopping = True
        self.stop_event.set()
        self.phase = TuneProgress(self.phase.stage if self.phase else "sweep",
                                  "stopping at the next safe point (the last good profile "
                                  "is left running)")
        self.changed()
        return True

    def begin(self, state: TuneState) -> None:
        self.state, self.tune_id, self.error, self.saved = state, None, "", ""
        self.running, self.stopping = True, False
        self.stop_event = asyncio.Event()
        self.phase = TuneProgress("baseline", f"starting a tune of {state.request.profile}")
        self.changed()

    async def run(self, bench: TuneBench, store: RunStore, profiles_dir: Path | None,
                  on_saved: Callable[[str, ServerProfile], object] = lambda _n, _p: None,
                  sweeps: HostSweeps | None = None,
                  saveable: Callable[[ServerProfile], ServerProfile] = lambda p: p) -> None:
        """The job, start to end (`begin` first). Errors are kept for the view, not raised.
        `sweeps`: where the bench's sweeps are reported as the host's (the dashboard)."""
        from console.jobs.tune import run_tune, tuned_comment, tuned_profile

        assert self.state is not None
        if sweeps is not None:
            bench.on_sweep_event = sweeps
        try:
            state, self.tune_id = await run_tune(bench, self.state, store=store,
                                                 on_progress=self.progress,
                                                 stop=self.stop_event)
            self.state = state
            if profiles_dir is not None and any(r.outcome == "kept" for r in state.ladder):
                profile = saveable(tuned_profile(state))  # without this demo run's port
                self.saved = self._save(state, profile, tuned_comment(state, self.tune_id),
                                        profiles_dir, on_saved)
                state.saved_profile = self.saved or None
                store.save_tune(self.tune_id, self.host, state.status,
                                _state_json(state, self.tune_id))
        except (PlateauError, OSError) as exc:
            self.error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        finally:
            self.running, self.stopping = False, False
            if sweeps is not None:
                sweeps.close()
            store.close()
            self.changed()

    def _save(self, state: TuneState, profile: ServerProfile, comment: str, directory: Path,
              on_saved: Callable[[str, ServerProfile], object]) -> str:
        from console.session.profiles import ProfileSaveError, save_profile

        name = f"{state.request.profile}-tuned"
        try:
            path, _skipped = save_profile(directory, name, profile, comment)
        except ProfileSaveError as exc:
            self.error = f"the tuned profile was not saved: {exc}"
            return ""
        on_saved(name, profile)
        return str(path)


class HostSweeps:
    """A tune's sweeps as its host's own: each event of the bench's sweeps becomes the
    session's SweepProgress / SweepPointDone / SweepDone (console.session.adapters'
    sweep_event_sink, what a console sweep and an A/B's passes emit), so the dashboard's chart
    and header draw the tune's current sweep as it runs. The job holds the host meanwhile:
    a sweep it leaves open (it ended between two events) is closed by `close()`."""

    def __init__(self, session: Session) -> None:
        from console.session.adapters import sweep_event_sink

        self.session = session
        self._sink = sweep_event_sink(session.host.name, session.emit)
        self._open: str | None = None  # the run id of the sweep it reported running

    def __call__(self, event: SweepEvent) -> None:
        self._sink(event)
        sweep = self.session.state.sweep
        self._open = sweep.run_id if sweep.running else None

    def close(self) -> None:
        from console.session.events import SweepDone

        sweep = self.session.state.sweep
        if self._open is not None and sweep.running and sweep.run_id == self._open:
            self.session.emit(SweepDone(self.session.host.name, self._open, False,
                                        "the tune ended during this sweep"))
        self._open = None


def session_bench(session: Session, store: RunStore) -> TuneBench:
    """The tuner's bench on a session's host (its transport, lifecycle and flag discovery)."""
    return session.tune_bench(store)


def control_of(tunes: dict[str, TuneControl], host: str) -> TuneControl:
    """`host`'s tune in `tunes`, a new idle one the first time."""
    found = tunes.get(host)
    if found is None:
        found = tunes[host] = TuneControl(host)
    return found


def begin_tune(control: TuneControl, session: Session, request: TuneRequest,
               profile: ServerProfile, *, store_path: Path | None, profiles_dir: Path | None,
               bench_for: BenchFor | None = None,
               on_saved: Callable[[str, ServerProfile], object] = lambda _n, _p: None,
               saveable: Callable[[ServerProfile], ServerProfile] = lambda p: p,
               ) -> Coroutine[Any, Any, None]:
    """Start a tune of `request` (its profile `profile`) on `session`'s host: the run store and
    the host's bench are opened now, and the job (`control.run`, its sweeps reported as the
    host's) is returned for the caller to run. Raises what opening the bench raised (not
    connected, a replay) with nothing begun."""
    from console.jobs.tune import new_state
    from console.store.db import RunStore

    store = RunStore(store_path)
    try:
        bench = (bench_for or session_bench)(session, store)
    except BaseException:
        store.close()
        raise
    control.begin(new_state(request, profile))
    return control.run(bench, store, profiles_dir, on_saved=on_saved,
                       sweeps=HostSweeps(session), saveable=saveable)


def _state_json(state: TuneState, tune_id: int | None) -> dict[str, object]:
    from console.jobs.tune_models import state_json

    return state_json(state, tune_id)


__all__ = ["BenchFor", "HostSweeps", "TuneControl", "begin_tune", "control_of", "session_bench",
           "tune_objectives", "tune_preset", "tune_request"]
