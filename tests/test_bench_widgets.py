"""SweepChart and CompareTable in a small App: snapshots and live updates."""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import App, ComposeResult

from console.bench.compare import compare_runs
from console.bench.models import StepResult
from tests.support.bench_fixtures import fake_step
from tests.support.gpu_fixtures import plateau_dark_theme
from tests.support.snapshot import SnapCompare
from widgets.compare_table import CompareTable
from widgets.sweep_chart import SweepChart

CONC = (1, 2, 4, 8, 16, 32, 64, 128, 256)
TOTAL_A = (120, 235, 450, 860, 1500, 2400, 3300, 3500, 3550)
TOTAL_B = (130, 250, 490, 940, 1700, 2800, 3900, 4400, 4500)

def _run(totals: tuple[int, ...], ttft0: int) -> list[StepResult]:
    pairs = zip(CONC, totals, strict=True)
    return [fake_step(c, t, index=i, ttft=ttft0 + c) for i, (c, t) in enumerate(pairs)]


RUN_A = _run(TOTAL_A, 30)
RUN_B = _run(TOTAL_B, 25)


class ChartApp(App[None]):
    def __init__(
        self,
        runs: Sequence[tuple[str, Sequence[StepResult]]],
        *,
        ascii_only: bool = False,
        table: bool = False,
    ) -> None:
        super().__init__()
        self.runs = runs
        self.ascii_only = ascii_only
        self.table = table

    def compose(self) -> ComposeResult:
        yield SweepChart(ascii_only=self.ascii_only)
        if self.table:
            yield CompareTable()

    def on_mount(self) -> None:
        self.register_theme(plateau_dark_theme())
        self.theme = "plateau-dark"
        self.query_one(SweepChart).set_runs(self.runs)
        if self.table and len(self.runs) >= 2:
            (la, a), (lb, b) = self.runs[:2]
            self.query_one(CompareTable).set_comparison(compare_runs(a, b, label_a=la, label_b=lb))


def test_chart_ab_snapshot(snap_compare: SnapCompare) -> None:
    app = ChartApp([("triton-moe", RUN_A), ("cutlass-moe", RUN_B)])
    assert snap_compare(app, terminal_size=(120, 18))


def test_chart_ascii_snapshot(snap_compare: SnapCompare) -> None:
    app = ChartApp([("triton-moe", RUN_A), ("cutlass-moe", RUN_B)], ascii_only=True)
    assert snap_compare(app, terminal_size=(80, 18))


def test_compare_table_snapshot(snap_compare: SnapCompare) -> None:
    app = ChartApp([("triton-moe", RUN_A), ("cutlass-moe", RUN_B)], table=True)
    assert snap_compare(app, terminal_size=(160, 34))


async def test_live_steps_update_the_chart_and_knee() -> None:
    app = ChartApp([("triton-moe", RUN_A)])
    async with app.run_test(size=(120, 18)) as pilot:
        chart = app.query_one(SweepChart)
        chart.start_live("cutlass-moe")
        text = chart.render().plain
        assert "B: cutlass-moe" in text
        for step in RUN_B[:3]:
            chart.add_step(step)
            await pilot.pause()
        text = chart.render().plain
        assert "B still scaling at 4" in text
        assert "A saturates at ~64: +6.1% from 64\u2192128" in text
        for step in RUN_B[3:]:
            chart.add_step(step)
        await pilot.pause()
        assert "B saturates at ~128: +2.3% from 128\u2192256" in chart.render().plain
        chart.add_step(fake_step(512, 0, status="failed", index=9))
        assert "512  failed" in chart.render().plain


async def test_empty_chart_says_it_is_waiting() -> None:
    app = ChartApp([])
    async with app.run_test(size=(80, 10)):
        assert "waiting for the first finished step" in app.query_one(SweepChart).render().plain


async def test_show_replaces_live_steps_and_progress() -> None:
    app = ChartApp([("triton-moe", RUN_A)])
    async with app.run_test(size=(120, 18)):
        chart = app.query_one(SweepChart)
        chart.start_live("now")
        chart.show(RUN_B[:4], "step 5/9: concurrency 16")
        text = chart.render().plain
        assert "step 5/9: concurrency 16" in text
        assert "B still scaling at 8" in text
        chart.show(RUN_B[:2], "")
        assert "B still scaling at 2" in chart.render().plain
