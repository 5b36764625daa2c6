"""Numbers and words that agree (issue 26, item 11): a cancelled sweep is said as cancelled,
not "failed: cancelled"; a finished sweep's chart series is its run, not "live"."""

from __future__ import annotations

from typing import Any

from console.app.app import PlateauApp
from console.session.events import SessionEvent, SweepDone, SweepPointDone, SweepProgress
from console.session.replay import ReplaySession
from tests.support.app_fixtures import app_config, demo_events, fixed_clock, sweep_points
from widgets.sweep_chart import SweepChart


def _app(ending: list[Any]) -> PlateauApp:
    loaded = app_config()
    host = loaded.config.hosts[0]
    events: list[SessionEvent] = [e for e in demo_events(host.name)
                                  if not isinstance(e, SweepPointDone | SweepDone)]
    points = sweep_points()[:3]
    events += [SweepProgress(host.name, "12", 1, 5, 4, "measure")]
    events += [SweepPointDone(host.name, "12", p) for p in points]
    session = ReplaySession.from_events(host, events + ending, clock=fixed_clock)
    return PlateauApp(loaded, [session], clock=fixed_clock, tick_seconds=None)


async def _settle(pilot: Any) -> None:
    await pilot.pause()
    await pilot.pause(0.05)


async def test_a_cancelled_sweep_is_said_as_cancelled() -> None:
    app = _app([SweepDone("demo", "12", False, "cancelled")])
    async with app.run_test(size=(120, 40)) as pilot:
        await _settle(pilot)
        said = [e.message for e in app.active_state.events if e.source == "sweep"]
        assert said[-1] == "sweep 12 cancelled", said
        assert not any("failed" in m for m in said)
        chart = app.screen.query_one(SweepChart)
        assert chart.progress == "sweep 12 cancelled"


async def test_a_finished_sweeps_series_is_its_run_not_live() -> None:
    app = _app([SweepDone("demo", "12", True, "finished")])
    async with app.run_test(size=(120, 40)) as pilot:
        await _settle(pilot)
        chart = app.screen.query_one(SweepChart)
        assert [r.label for r in chart.runs] == ["run 12"]


async def test_a_running_sweeps_series_is_live() -> None:
    app = _app([])
    async with app.run_test(size=(120, 40)) as pilot:
        await _settle(pilot)
        assert [r.label for r in app.screen.query_one(SweepChart).runs] == ["live"]
