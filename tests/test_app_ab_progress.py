"""An A/B shows its progress and time left (issue 26, item 3): the header counts steps against
the dialog's plan, and the time left comes from the estimate before the first step and from
the measured steps after."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from console.app.progress import ABPlan, progress_line
from console.app.screens.modals import ABPicker
from console.session.events import ABUpdate, SweepPointDone, SweepProgress
from console.session.state import HostState
from tests.support.app_fixtures import sweep_points
from widgets.header import PlateauHeader

T0 = datetime(2026, 3, 14, 12, 0, tzinfo=UTC)


def test_time_left_comes_from_the_estimate_then_from_measured_steps() -> None:
    now = [T0]
    state = HostState("demo", clock=lambda: now[0])
    state.apply(ABUpdate("demo", "restart-a", "triton-moe", "cutlass-moe", "quick", ""))
    plan = ABPlan(estimate_s=300.0, total_steps=18, started=T0)
    now[0] = T0 + timedelta(seconds=60)
    assert progress_line(state, plan) == (
        "A/B triton-moe vs cutlass-moe: restart-a · 0/18 steps, ~4 min left")
    state.apply(ABUpdate("demo", "sweep-a", "triton-moe", "cutlass-moe", "quick", ""))
    state.apply(SweepProgress("demo", "5", 1, 9, 1))
    for point in sweep_points()[:3]:
        state.apply(SweepPointDone("demo", "5", point))
    now[0] = T0 + timedelta(seconds=120)  # 3 steps in 120 s: 15 more take 600 s
    assert "sweep-a · 3/18 steps, ~10 min left · sweep running" in progress_line(state, plan)


async def test_starting_an_ab_puts_its_plan_in_the_header(app_factory: Any) -> None:
    app = app_factory()
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.press("a")
        for _ in range(50):
            await pilot.pause(0.05)
            if isinstance(app.screen, ABPicker):
                break
        picker = app.screen
        assert isinstance(picker, ABPicker)
        guess = picker.last_estimate
        await pilot.press("ctrl+s")
        await pilot.pause()
        plan = app.ab_plans["demo"]
        assert guess is not None and plan.total_steps == guess.steps
        session = app.active_session
        session.feed(ABUpdate("demo", "restart-a", "cutlass-moe", "triton-moe",
                              "quick", ""))
        await pilot.pause(0.1)
        header = str(app.screen.query_one(PlateauHeader).render())
        assert f"0/{guess.steps} steps, ~" in header and " left" in header, header
