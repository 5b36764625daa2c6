"""The console's compare table with goodput and J per output token (issue 29): the two join
the five fixed metrics when the runs have them, and at 80 columns every metric is one column
(B's change in %, short names) so the whole table fits; at 160 each has A, B and the delta."""

from __future__ import annotations

from typing import Any

import pytest
from textual.app import App, ComposeResult

from console.bench.compare import compare_runs
from console.bench.models import SloResult, StepEnergy, StepResult
from console.bench.verdict import judge
from tests.support.bench_fixtures import fake_step
from tests.support.gpu_fixtures import plateau_dark_theme
from widgets.compare_table import CompareTable

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
    def compose(self) -> ComposeResult:
        yield CompareTable()

    def on_mount(self) -> None:
        self.register_theme(plateau_dark_theme())
        self.theme = "plateau-dark"
        self.query_one(CompareTable).set_comparison(
            compare_runs(A, B, label_a="cutlass-moe", label_b="tuned"),
            judge(A, B, label_a="cutlass-moe", label_b="tuned"))


def _labels(table: CompareTable) -> list[str]:
    return [str(c.label) for c in table.columns.values()]


async def test_at_80_columns_every_metric_is_one_column_and_the_table_fits() -> None:
    app = TableApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        table = app.query_one(CompareTable)
        assert _labels(table) == ["conc", "verdict", "out \u0394%", "TTFT50", "TTFT99", "ITL50",
                                  "goodput", "J/tok"]
        assert table.virtual_size.width <= 80
        row = [str(c) for c in table.get_row("128")]
        assert row[6].startswith("+36.") and row[7].startswith("-14.")  # goodput, J/tok
        assert "better" in row[1]
        await pilot.resize_terminal(160, 24)
        await pilot.pause()
        labels = _labels(table)
        assert "A J/out tok" in labels and "\u0394 goodput req/s" in labels
        assert "verdict (total tok/s)" in labels


async def test_without_energy_or_an_slo_the_five_fixed_metrics() -> None:
    plain = [s.model_copy(update={"energy": None, "metrics": s.metrics.model_copy(
        update={"slo": None}) if s.metrics else None}) for s in A]
    app = TableApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        table = app.query_one(CompareTable)
        table.set_comparison(compare_runs(plain, plain))
        assert table.shown == ("total tok/s", "output tok/s", "TTFT p50 ms", "TTFT p99 ms",
                               "ITL p50 ms")
        assert _labels(table) == ["conc", "tot \u0394%", "out \u0394%", "TTFT50", "TTFT99",
                                  "ITL50"]


@pytest.mark.parametrize("size", [(80, 24)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_compare_table_energy_snapshot(snap_compare: Any, size: tuple[int, int]) -> None:
    assert snap_compare(TableApp(), terminal_size=size)
