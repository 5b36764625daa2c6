"""Output vs total in words (issue 17, item 7) and the chart beside its tok/s table while a sweep
runs at 120x40 (item 5)."""

from __future__ import annotations

from typing import Any

import pytest
from rich.style import Style

from tests.support.bench_fixtures import fake_step
from widgets.sweep_chart import ChartRun, render_chart

STEPS = [fake_step(c, t) for c, t in ((1, 120), (4, 450), (16, 1500), (64, 3300))]


@pytest.mark.parametrize("ascii_only", [False, True])
def test_both_series_named_in_legend_and_at_their_lines(ascii_only: bool) -> None:
    colours = [Style(color="#5B9BD5"), Style(color="#E5A84B"), Style(color="#B48EDC")]
    text = render_chart([ChartRun("live", STEPS)], 116, 14, colours, ascii_only).plain
    legend, *rows = text.splitlines()
    assert "total tok/s" in legend and "output tok/s" in legend
    if ascii_only:
        assert "A = total tok/s, a = output tok/s" in legend
    plot = [r for r in rows if "\u2502" in r or " |" in r]
    assert any(" total " in r for r in plot) and any(" output " in r for r in plot)
    assert "conc  total output TTFT p50/p99" in text  # the table beside it has both rates
    assert "  3,300" in text  # c=64's total tok/s, in the table


def test_table_columns_fit_slow_latencies() -> None:
    from widgets.sweep_chart import LATENCY_PANEL_WIDTH, _latency_lines

    slow = fake_step(16, 171.0, ttft=4230.0)
    assert slow.metrics is not None
    slow = slow.model_copy(update={"metrics": slow.metrics.model_copy(update={
        "itl_ms": slow.metrics.itl_ms.model_copy(update={"p50": 281.04})})})
    row = _latency_lines(ChartRun("live", [slow]), LATENCY_PANEL_WIDTH, Style())[-1].plain
    assert row.endswith("281ms") and len(row) <= LATENCY_PANEL_WIDTH


@pytest.mark.parametrize("theme", ["plateau-dark", "plateau-light", "plateau-contrast"])
async def test_words_in_every_theme(app_factory: Any, theme: str) -> None:
    app = app_factory(theme=theme, ascii=theme == "plateau-contrast")
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.pause(0.05)
        chart = app.screen.query_one("#sweep-view")
        text = str(chart.render())
        assert "total tok/s" in text and "output tok/s" in text


async def test_chart_and_table_stay_while_a_sweep_runs_at_120x40(app_factory: Any) -> None:
    app = app_factory(sweep_running=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.pause(0.05)
        chart = app.screen.query_one("#sweep-view")
        assert chart.size.height >= 10
        text = str(chart.render())
        plot_rows = [line for line in text.splitlines() if "\u2502" in line]
        assert len(plot_rows) >= 5
        assert "conc  total output" in text
        assert app.screen.query_one("#log-lines").size.height >= 8  # the log keeps its lines
