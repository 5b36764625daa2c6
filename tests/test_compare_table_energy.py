"""The console's compare view with goodput and J per output token (issue 29): the two join
the five fixed metrics when the runs have them, each as A, B and delta, and at 80 columns the
view's split tables (widgets/split_table.py) keep every part within the width."""

from __future__ import annotations

from typing import Any

from textual.app import App, ComposeResult

from console.bench.compare import compare_runs
from console.bench.models import SloResult, StepEnergy, StepResult
from console.bench.verdict import judge
from tests.support.bench_fixtures import fake_step
from tests.support.gpu_fixtures import plateau_dark_theme
from widgets.compare_table import CompareTable, comparison_cells
from widgets.split_table import SplitTables

LEVELS = (16, 64, 128)


def _steps(scale: float, j_per_tok: float, goodput: float, repeat: int) -> list[StepResult]:
    out = []
    for i, c in enumerate(LEVELS):
        step = fake_step(c, 1000.0 * scale * (1 + i) + 3 * repeat, index=i, repeat=repeat)
        metrics = step.metrics.model_copy(update={"slo": SloResult(
            slo_ms={"ttft_p99_ms": 500.0}, sent=64, good=60,
            share=0.9, goodput_rps=goodput * (1 + i) + 0.05 * repeat)}) if step.metrics else None
        energy = StepEnergy(window="steady", window_s=20.0, gpus=8, samples=600,
                            mean_power_w_per_gpu=300.0, output_tok_per_j=1 / j_per_tok,
                            total_tok_per_j=4 / j_per_tok,
                            j_per_output_token=j_per_tok + 0.01 * repeat)
        out.append(step.model_copy(update={"metrics": metrics, "energy": energy}))
    return out


A = _steps(1.0, 2.40, 3.0, 0) + _steps(1.0, 2.40, 3.0, 1)
B = _steps(1.3, 2.05, 4.1, 0) + _steps(1.3, 2.05, 4.1, 1)


class TableApp(App[None]):
    """The compare view's tables (console/app/screens/views.py CompareScreen): SplitTables of
    CompareTables fed comparison_cells."""

    def __init__(self, a: list[StepResult], b: list[StepResult]) -> None:
        super().__init__()
        self.a, self.b = a, b

    def compose(self) -> ComposeResult:
        yield SplitTables("compare-table", lambda table_id: CompareTable(id=table_id),
                          id="compare-tables")

    def on_mount(self) -> None:
        self.register_theme(plateau_dark_theme())
        self.theme = "plateau-dark"
        comparison = compare_runs(self.a, self.b, label_a="cutlass-moe", label_b="tuned")
        keys, labels, rows, groups = comparison_cells(comparison, judge(self.a, self.b))
        self.query_one(SplitTables).show(labels, rows, keys=1, groups=groups, column_keys=keys,
                                         row_keys=[str(r.concurrency) for r in comparison.rows])


def _labels(app: TableApp) -> list[str]:
    return [str(c.label) for t in app.query_one(SplitTables).tables for c in t.columns.values()]


async def test_goodput_and_j_per_token_join_and_every_part_fits_80_columns() -> None:
    app = TableApp(A, B)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        tables = app.query_one(SplitTables).tables
        assert len(tables) > 1 and all(t.virtual_size.width <= 80 for t in tables)
        labels = _labels(app)
        for name in ("goodput req/s", "J/out tok"):
            assert [f"A {name}", f"B {name}", f"\u0394 {name}"] == [
                x for x in labels if x.endswith(name)]
        energy = next(t for t in tables if "d:J/out tok" in t.columns)
        row = [str(c) for c in energy.get_row("128")]
        assert row[-1] == "-0.4 (-14.6%)"  # 2.40 -> 2.05 J per output token: better
        good = next(t for t in tables if "d:goodput req/s" in t.columns)
        assert "(+36.6%)" in str(good.get_row("128")[-1])


async def test_without_energy_or_an_slo_the_five_fixed_metrics() -> None:
    plain = [s.model_copy(update={"energy": None, "metrics": s.metrics.model_copy(
        update={"slo": None}) if s.metrics else None}) for s in A]
    app = TableApp(plain, plain)
    async with app.run_test(size=(160, 24)) as pilot:
        await pilot.pause()
        labels = _labels(app)
        assert not any("goodput" in x or "J/out" in x for x in labels)
        assert [x for x in labels if x.startswith("A ")] == [
            "A total tok/s", "A output tok/s", "A TTFT p50 ms", "A TTFT p99 ms", "A ITL p50 ms"]


def test_compare_table_energy_snapshot(snap_compare: Any) -> None:
    assert snap_compare(TableApp(A, B), terminal_size=(80, 24))
