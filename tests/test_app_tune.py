"""The console's Tune view (`T`, issue 28): the CLI's tune job run from the console, its ladder
live, `x` stopping at a safe point, refusals while the host is busy, and snapshots.

The functional tests run the whole app on the simulator's virtual clock
(tests/support/virtual_bench.py): the tuner's bench is the in-process simulator (its Runner,
Engine, scheduler and log lines; real diagnosis, verdicts and SQLite), so a tune of several
simulated minutes takes seconds and nothing asserted depends on this machine's speed.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
from textual.message import Message
from textual.widgets import DataTable

from console.app.app import PlateauApp
from console.app.footer import PlateauFooter
from console.app.messages import HostIntent, TuneRequested, TuneStopRequested
from console.app.screens.dashboard import DashboardScreen
from console.app.screenshot import export_text
from console.config import LoadedConfig
from console.jobs.tune import load_state
from console.jobs.tune_models import Change, Rung, TuneProgress, TuneState
from console.server.lease import host_lease
from console.session.replay import ReplaySession
from console.session.tune_control import TuneControl
from console.store.db import RunStore
from tests.support.app_fixtures import app_config, demo_events, fixed_clock, make_app
from tests.support.virtual_bench import VirtualBench, run_virtual
from tests.support.virtual_tune import SPEC


@pytest.fixture
def hermetic(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")
    monkeypatch.setenv("PLATEAU_CONFIG", str(tmp_path / "absent.toml"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    return tmp_path


DEMO_RUN_PORT = 31234


def _virtual_app(tmp: Path) -> tuple[PlateauApp, list[VirtualBench]]:
    """The demo host (replayed: connected, cutlass-moe ready) whose tunes run on the virtual
    bench with the reference workload as the `quick` preset."""
    loaded = app_config()
    # as `plateau demo` runs: a port it picked and a GPU state file of this run
    profiles = {name: p.model_copy(update={"port": DEMO_RUN_PORT})
                for name, p in loaded.config.profiles.items()}
    hosts = [h.model_copy(update={"sim_state_file": "/nonexistent/gpu-state.json"})
             for h in loaded.config.hosts]
    config = loaded.config.model_copy(update={"sweeps": {"quick": SPEC}, "profiles": profiles,
                                              "hosts": hosts})
    sessions = [ReplaySession.from_events(h, demo_events(h.name), clock=fixed_clock)
                for h in config.hosts]
    app = PlateauApp(LoadedConfig(config, None), sessions, clock=fixed_clock,
                     start_screen="dashboard", tick_seconds=None,
                     store_path=tmp / "h.sqlite", profiles_dir=tmp / "profiles.d")
    benches: list[VirtualBench] = []

    def bench_for(_session: Any, store: RunStore) -> VirtualBench:
        benches.append(VirtualBench(store, tmp, host=_session.host.name))
        return benches[-1]

    app.tune_bench_for = bench_for
    return app, benches


async def _until(pilot: Any, done: Any, limit_s: float = 3600.0) -> None:
    """Wait on the virtual clock (simulated seconds) until done()."""
    waited = 0.0
    while not done():
        assert waited < limit_s, "the tune never got there"
        await pilot.pause(1.0)
        waited += 1.0


# A whole tune (about 5 simulated minutes, 6 launches of the in-process simulator): seconds of
# CPU, more than 5 s on a loaded machine.
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_t_then_enter_tunes_the_demo_and_shows_the_ladder(hermetic: Path) -> None:
    app, benches = _virtual_app(hermetic)
    seen: dict[str, Any] = {}

    async def go() -> str:
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            await pilot.press("T")
            await pilot.pause()
            assert app.current_mode == "tune"
            await pilot.press("enter")
            control = app.tunes["demo"]

            def watch() -> None:  # while the job sweeps: the lease and the refusals
                phase = control.phase
                if control.running and phase and phase.stage == "sweep" and "lease" not in seen:
                    holder = host_lease("demo").holder
                    seen["lease"] = holder.purpose if holder else None
                    seen["sweep"] = app.unavailable_reason("sweep")
                    seen["ab"] = app.unavailable_reason("ab")
                    seen["again"] = app.unavailable_reason("tune")
                if control.state is not None and control.state.ladder and "row" not in seen:
                    table: DataTable[Any] = app.screen.query_one("#tune-ladder", DataTable)
                    seen["row"] = [str(c) for c in table.get_row_at(0)]  # live, mid-tune

            control.listeners.append(watch)
            await _until(pilot, lambda: not control.running)
            await pilot.pause()
            await benches[0].close()
            seen["after"] = host_lease("demo").holder
            return export_text(app)

    text = run_virtual(go())
    control = app.tunes["demo"]
    assert control.error == "" and control.state is not None
    state = control.state
    assert state.status == "done" and [r.cause for r in state.ladder] == [
        "cuda-graph-ceiling", "tp-allreduce-pcie"]
    assert all(r.outcome == "kept" for r in state.ladder) and state.restarts == 6
    # the job held the host's lease, and the console refused the rest while it ran
    assert seen["lease"] == "tune cutlass-moe"
    assert seen["sweep"] == seen["ab"] == seen["again"] == "a tune is running"
    # the first rung appeared in the table as soon as it was judged
    assert seen["row"][:2] == ["1", "cuda-graph-ceiling"] and seen["row"][4] == "kept"
    assert "at 128" in seen["row"][3]
    # the ladder on screen: each step's verdict at the knee, gain, restarts, minutes
    for rung in state.ladder:
        line = next(line for line in text.splitlines() if line.strip().startswith(
            f"{rung.step} "))
        assert rung.cause in line and rung.change in line
        assert f"{rung.delta_pct:+.1f}±{rung.half_width_pct:.1f}% at 128" in line
        assert f"{rung.cumulative_pct:+.1f}%" in line and f" {rung.restarts} " in line
    assert "done: no clear cause left" in text and f"restarts {state.restarts}" in text
    # stored as the CLI stores it, and the tuned profile saved and offered
    with RunStore(hermetic / "h.sqlite") as store:
        assert load_state(store, control.tune_id or 0).ladder == state.ladder
    saved = hermetic / "profiles.d" / "cutlass-moe-tuned.toml"
    assert control.saved == str(saved) and saved.exists()
    # saved as the tune's, without this demo run's port and state file (issue 41, Low)
    first, body = saved.read_text().split("\n", 1)
    assert first.startswith(f"# Saved by plateau tune (tune {control.tune_id} of cutlass-moe "
                            "on demo): cutlass-moe as configured plus the changes its A/B "
                            "verdicts kept: --cuda-graph-max-bs-decode 128; "), first
    table = tomllib.loads(body)["profiles"]["cutlass-moe-tuned"]
    assert table["port"] == 30000 != DEMO_RUN_PORT and "sim-state-file" not in table["flags"]
    assert app.config.profiles["cutlass-moe-tuned"].flags["cuda-graph-max-bs-decode"] == 128
    assert len(benches[0].launches) == state.restarts
    assert seen["after"] is None  # and let it go


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_x_stops_at_the_next_safe_point_with_the_good_profile_running(hermetic: Path) -> None:
    app, benches = _virtual_app(hermetic)
    messages: list[Message] = []

    async def go() -> str:
        async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
            await pilot.pause()
            await pilot.press("T", "enter")
            control = app.tunes["demo"]
            # into the first A/B: the candidate is running
            await _until(pilot, lambda: any(n.endswith("+cuda-graph-ceiling")
                                            for n, _l in benches[0].launches))
            await pilot.press("x")
            await pilot.pause()
            assert control.stopping and "stopping at the next safe point" in export_text(app)
            await _until(pilot, lambda: not control.running)
            await pilot.pause()
            await benches[0].close()
            return export_text(app)

    text = run_virtual(go())
    # Enter and x went up as intents to the app's handlers (console/app/intents.py); the hook
    # sees a message at each widget it bubbles through
    intents = list(dict.fromkeys(m for m in messages if isinstance(m, HostIntent)))
    assert [type(m) for m in intents] == [TuneRequested, TuneStopRequested]
    assert isinstance(intents[0], TuneRequested) and intents[0].request.profile == "cutlass-moe"
    control = app.tunes["demo"]
    state = control.state
    assert state is not None and control.error == ""
    assert state.status == "stopped" and "at your request" in state.stop_reason
    assert state.ladder == []  # stopped inside the A/B: nothing judged, nothing kept
    name, launch = benches[0].launches[-1]
    assert (name, launch) == ("cutlass-moe", "stop")  # the last good profile runs
    assert "stopped: stopped at your request" in text and control.saved == ""
    assert "cutlass-moe-tuned" not in app.config.profiles


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_dashboard_chart_draws_the_tunes_sweep_as_it_runs(hermetic: Path) -> None:
    """The tune's sweeps reach the host's state as a console sweep's do: the dashboard's chart
    draws the running one step by step, the header counts its steps, and its end is the
    host's last complete run. The dashboard's x does not pretend to stop it."""
    app, benches = _virtual_app(hermetic)
    seen: dict[str, Any] = {}

    async def go() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            await pilot.press("T", "enter", "d")
            control = app.tunes["demo"]
            state = app.sessions["demo"].state
            await _until(pilot, lambda: (state.sweep.running and bool(state.sweep.points))
                         or not control.running)
            assert control.running, "the tune ended without a sweep on the host"
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, DashboardScreen)
            seen["chart"] = [(r.label, list(r.steps)) for r in screen.sweep_view.runs]
            seen["points"], seen["run"] = list(state.sweep.points), state.sweep.run_id
            seen["header"] = app.header_info(state).sweep
            seen["keys"] = [(k.key, k.description)
                            for k in screen.query_one(PlateauFooter).shown_keys]
            await pilot.press("x")
            await pilot.pause()
            seen["said"] = [str(n.message) for n in app._notifications]
            control.stop()
            await _until(pilot, lambda: not control.running)
            await pilot.pause()
            seen["after"] = state.sweep.running
            seen["complete"] = state.last_complete
            seen["events"] = [e.message for e in state.events]
            await benches[0].close()

    run_virtual(go())
    with RunStore(hermetic / "h.sqlite") as store:
        baseline = store.get_run(int(seen["run"]))
    assert baseline.label.startswith("tune: ")  # the tune's own run, stored as the CLI's
    # the chart draws the tune's sweep, as far as it had come, beside the host's last
    # complete run (the demo's), as it draws a console sweep
    (kept, _), running = seen["chart"]
    assert kept.endswith("(last complete)")
    assert running == (f"run {seen['run']} (running)", seen["points"])
    assert [p.index for p in seen["points"]] == list(range(len(seen["points"])))
    assert seen["points"][0].concurrency == SPEC.concurrency[0]
    assert seen["header"].startswith("sweep running: step ")
    assert ("x", "Stop sweep") not in seen["keys"]
    assert "Stop sweep: a tune is running (T, then x stops it at a safe point)" in seen["said"]
    # stopped at a safe point: the sweep ended, and it is the host's last complete run
    assert seen["after"] is False
    complete = seen["complete"]
    assert complete is not None and complete.run_id == seen["run"]
    assert len(complete.points) == len(SPEC.concurrency)
    assert f"sweep {seen['run']} finished: finished" in seen["events"]


async def test_a_tune_is_refused_while_a_sweep_runs(hermetic: Path) -> None:
    app = make_app(screen="tune", sweep_running=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        said = [str(n.message) for n in app._notifications]
        assert "Tune: a sweep is running" in said
        control = app.tunes["demo"]
        assert control.state is None and not control.running
        assert "no tune yet on demo" in export_text(app)


def _mid_tune() -> TuneControl:
    """A tune in its second A/B: one kept step, one running."""
    state = TuneState.model_validate({
        "request": {"host": "demo", "profile": "cutlass-moe", "preset": "quick",
                    "spec": SPEC.model_dump()},
        "start": {"launch": ["python3", "-m", "console.sim"], "model_path": "m"},
        "restarts": 5, "minutes": 3.4, "gain_pct": 45.3, "resumed": 1,
        "notes": ["power-cap (40%): raise the power limit: not a profile change, left to you"],
    })
    state.ladder = [
        Rung(step=1, cause="cuda-graph-ceiling", change="--cuda-graph-max-bs-decode 128",
             applied=Change(flags={"cuda-graph-max-bs-decode": 128}), why="implied",
             outcome="kept", levels=[128], delta_pct=45.3, half_width_pct=35.1,
             cumulative_pct=45.3, restarts=4, minutes=3.0, resumed=True),
        Rung(step=2, cause="moe-untuned", change="--moe-runner-backend triton",
             why="implied", outcome="rejected", levels=[128], delta_pct=-2.1,
             half_width_pct=4.0, cumulative_pct=45.3, restarts=5, minutes=3.3,
             reason="the interval crosses zero (B -2.1% ± 4.0% at 128: within noise)"),
    ]
    return TuneControl("demo", state=state, tune_id=3, running=True, phase=TuneProgress(
        "sweep", "step 3: cutlass-moe+tp-allreduce-pcie at [128] (pass 1/2)"))


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_tune_view_snapshot(snap_compare: Any, app_factory: Any, size: tuple[int, int]) -> None:
    app = app_factory(screen="tune")
    app.tunes["demo"] = _mid_tune()

    async def settle(pilot: Any) -> None:
        await pilot.pause()
        await pilot.pause(0.1)

    assert snap_compare(app, terminal_size=size, run_before=settle)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=lambda s: f"{s[0]}x{s[1]}")
async def test_the_footer_shows_the_views_own_keys_first(hermetic: Path,
                                                         size: tuple[int, int]) -> None:
    """Enter, o and x lead the footer (they had no room behind the app's keys), and the key
    shown is the one that acts: x stops the tune here, not the sweep."""
    app = make_app(screen="tune")
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        keys = [(k.key, k.description) for k in app.screen.query_one(PlateauFooter).shown_keys]
        # the view's keys (and its Back) before the app's
        assert keys[:4] == [("escape", "Back"), ("enter", "Tune"), ("o", "Objective"),
                            ("x", "Stop tune")]
        assert ("r", "Restart") in keys[4:] and ("x", "Stop sweep") not in keys
        await pilot.press("x")
        await pilot.pause()
        assert "Stop tune: no tune is running" in [str(n.message) for n in app._notifications]


async def test_o_cycles_the_objective_the_next_tune_raises(hermetic: Path) -> None:
    """Without an SLO in the preset goodput is not offered; with one it is, and Enter's
    request carries the objective and the preset's SLO."""
    from console.config_models import SloSpec
    from console.session.tune_control import tune_objectives, tune_request

    app = make_app(screen="tune")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert "objective total tok/s (o: change)" in export_text(app)
        seen = []
        for _ in range(3):
            await pilot.press("o")
            await pilot.pause()
            seen.append(app.tunes["demo"].objective)
        assert seen == ["output", "tok-per-joule", "total"]
        await pilot.press("o", "o")
        await pilot.pause()
        assert "objective output tok/J (o: change)" in export_text(app)
        assert "Tune objective: output tok/J" in [str(n.message) for n in app._notifications]
    with_slo = app.config.model_copy(update={"sweeps": {
        "quick": SPEC.model_copy(update={"slo": SloSpec(ttft_p99_ms=500)})}})
    assert tune_objectives(with_slo) == ["total", "output", "goodput", "tok-per-joule"]
    request = tune_request(with_slo, "demo", "cutlass-moe", "goodput")
    assert request.metric == "goodput req/s" and request.spec.slo == SloSpec(ttft_p99_ms=500)
    with pytest.raises(ValueError, match="needs an SLO"):
        tune_request(app.config, "demo", "cutlass-moe", "goodput")
