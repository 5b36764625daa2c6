"""The dashboard's layout from 80x24 to 200x60: the plan adds up, the log keeps its lines, the
GPU rows go two a line when short, the sweep becomes one line, toggles and zoom re-plan, and
the log draws no scrollbar glyphs while following."""

from __future__ import annotations

from typing import Any

import pytest
from rich.style import Style

from console.app.footer import PlateauFooter
from console.app.screens.dashboard import (
    LOG_MIN_LINES,
    PANELS,
    SWEEP_CHART_MIN,
    DashboardScreen,
    plan_layout,
)
from tests.support.bench_fixtures import fake_step
from widgets.log_lines import LogLines
from widgets.sweep_chart import ChartRun, render_summary

SIZES = [(80, 24), (100, 30), (120, 40), (160, 48), (200, 60)]


async def _settle(pilot: Any) -> None:
    await pilot.pause()
    await pilot.pause(0.1)
    await pilot.pause()


def _log_rows(width: int, height: int, plan: Any) -> int:
    """Rows left to the log panel (the 1fr one) after header, footer and the other panels."""
    return height - 2 - (plan.top or 0) - (plan.sweep or 0)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("gpus", [1, 8, 16])
@pytest.mark.parametrize("sweep_data", [False, True])
def test_plan_fits_and_keeps_the_log(size: tuple[int, int], gpus: int, sweep_data: bool) -> None:
    width, height = size
    plan = plan_layout(width, height, gpus=gpus, sweep_data=sweep_data)
    log = _log_rows(width, height, plan)
    assert log - plan.chrome - 1 >= LOG_MIN_LINES  # the status line, then at least 8 lines
    if plan.narrow:
        assert plan.top == plan.gpus + plan.server
    else:
        assert plan.top == max(plan.gpus, plan.server)
    assert plan.sweep is not None and plan.sweep >= plan.chrome + 1
    if not sweep_data:
        assert plan.sweep == plan.chrome + 1  # nothing to plot: one line


def test_small_terminals_trade_boxes_and_columns_for_rows() -> None:
    plan = plan_layout(80, 24, gpus=8, sweep_data=True)
    assert plan.short and plan.narrow and plan.chrome == 1
    assert plan.gpu_columns == 2 and plan.gpu_rows is None  # all 8 GPUs in 4 rows
    assert plan.gpus == 1 + 1 + 4  # title rule, summary, 4 rows
    assert plan.server_dense and plan.server == 1 + 3
    assert plan.sweep == 2  # the knee in one line
    assert not plan.log_detail
    sixteen = plan_layout(80, 24, gpus=16, sweep_data=True)
    assert sixteen.gpu_columns == 2 and sixteen.gpu_rows == 4  # the rest scroll
    full_rows = plan_layout(80, 24, gpus=8, gpu_row_height=3)
    assert full_rows.gpu_columns == 1  # three-line rows need the whole width


def test_large_terminals_get_boxes_a_chart_and_the_detail_pane() -> None:
    plan = plan_layout(200, 60, gpus=8, sweep_data=True)
    assert not plan.short and not plan.narrow and plan.chrome == 2
    assert plan.gpu_columns == 1 and plan.gpu_rows is None
    assert plan.sweep is not None and plan.sweep - 2 >= SWEEP_CHART_MIN
    assert plan.log_detail
    assert plan.server_scale == 2  # the server box is as tall as the GPU panel


def test_hidden_panels_give_their_rows_away() -> None:
    no_log = plan_layout(80, 24, gpus=8, visible=frozenset({"gpus", "server", "sweep"}),
                         sweep_data=True)
    assert no_log.sweep is None  # the sweep takes the rest
    top_only = plan_layout(80, 24, gpus=8, visible=frozenset({"gpus", "server"}))
    assert top_only.top is None and top_only.gpu_rows is None
    no_gpus = plan_layout(80, 24, gpus=8, visible=frozenset(PANELS) - {"gpus"})
    assert no_gpus.gpus == 0 and no_gpus.top == no_gpus.server


async def test_80x24_shows_every_gpu_eight_log_lines_and_a_one_line_sweep(
    app_factory: Any,
) -> None:
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await _settle(pilot)
        screen = app.screen
        assert isinstance(screen, DashboardScreen)
        assert screen.has_class("-short") and screen.has_class("-narrow")
        assert screen.query_one("#header").size.height == 1
        lines = screen.query_one(LogLines)
        assert lines.size.height >= LOG_MIN_LINES
        assert screen.query_one("#sweep-view").size.height == 1
        rows = list(screen.query(".gpu-row"))
        assert len(rows) == 8
        bottom = screen.query_one("#gpus").region.bottom
        assert all(row.region.height == 1 and row.region.bottom <= bottom for row in rows)
        assert len({row.region.x for row in rows}) == 2  # two columns
        # Nothing is pushed off screen: the screen does not scroll.
        assert screen.max_scroll_y == 0
        footer = screen.query_one(PlateauFooter)
        keys = [key.key for key in footer.shown_keys][:8]
        assert keys[:3] == ["r", "s", "f"] and "question_mark" in keys and "q" in keys


async def test_toggles_and_zoom_replan(app_factory: Any) -> None:
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await _settle(pilot)
        screen = app.screen
        chart = screen.query_one("#sweep-view")
        await pilot.press("3")  # hide the log: the sweep chart takes its rows
        await _settle(pilot)
        assert chart.size.height >= SWEEP_CHART_MIN
        await pilot.press("3")
        await _settle(pilot)
        assert chart.size.height == 1
        await pilot.press("z")  # the focused GPU panel fills the screen, one GPU a line
        await _settle(pilot)
        gpus = screen.query_one("#gpus")
        assert screen.maximized is gpus
        assert gpus.size.height >= 20
        assert len({row.region.x for row in screen.query(".gpu-row")}) == 1
        await pilot.press("z")
        await _settle(pilot)
        assert screen.maximized is None
        assert gpus.outer_size.height == 6 and screen.query_one(LogLines).size.height >= 8


async def test_log_draws_no_scrollbar_while_following(app_factory: Any) -> None:
    app = app_factory()
    async with app.run_test(size=(200, 60)) as pilot:
        await _settle(pilot)
        lines = app.screen.query_one(LogLines)
        assert (lines.scrollbar_size_vertical, lines.scrollbar_size_horizontal) == (0, 0)
        lines.focus()
        await pilot.press("space")  # pause: a thin scrollbar shows where the view is
        await _settle(pilot)
        assert lines.styles.scrollbar_size_vertical == 1
        assert lines.styles.scrollbar_size_horizontal == 0


def test_sweep_summary_says_the_knee_in_one_line() -> None:
    steps = [fake_step(c, t, index=i) for i, (c, t) in
             enumerate([(1, 100), (2, 200), (4, 390), (8, 400)])]
    colours = [Style(color="blue"), Style(color="yellow"), Style(color="magenta")]
    runs = [ChartRun("triton", steps), ChartRun("cutlass", steps[:2])]
    line = render_summary(runs, 200, 1, colours, "sweep 3: 4 step(s)").plain
    assert "\n" not in line
    assert line.startswith("sweep 3: 4 step(s)")
    assert "A triton 400 tok/s @8" in line and "knee \u2248 4 (+2.6% to 8)" in line
    assert "B cutlass 200 tok/s @2" in line and "still scaling at 2" in line
    assert len(render_summary(runs, 40, 1, colours).plain) <= 40
    two = render_summary(runs, 200, 2, colours, "progress").plain.split("\n")
    assert two[0].startswith("A triton") and two[1].startswith("B cutlass")
    empty = render_summary([], 80, 1, colours).plain
    assert "press s" in empty
