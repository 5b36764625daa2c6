"""The sweep chart's Pareto mode in the whole app: the demo host after a finished sweep, `p`
pressed on the dashboard (issue 29). Snapshots at 120x40 and 80x24, on fixed steps shaped like
the demo's reference sweep (cutlass-moe, 8 GPUs, plateau near 806 total tok/s from 64 on), so
the picture does not depend on this machine's speed; the host has no stored runs (the
app_factory's store is absent), so the frontier is the run's own.
"""

from __future__ import annotations

from typing import Any

import pytest

from console.bench.models import Distribution, StepEnergy, StepMetrics, StepResult
from tests.test_app_snapshots import _settle

# concurrency: (total tok/s, median TPOT ms): per-user tok/s = 1000 / TPOT
REFERENCE = {1: (48.0, 21.0), 4: (180.0, 22.5), 16: (560.0, 28.0), 32: (700.0, 45.0),
             64: (790.0, 80.0), 128: (806.0, 158.0)}


def reference_steps() -> list[StepResult]:
    steps = []
    for index, (c, (total, tpot)) in enumerate(REFERENCE.items()):
        metrics = StepMetrics(concurrency=c, total_tok_s=total, output_tok_s=total / 5,
                              tpot_ms=Distribution(p50=tpot, count=c))
        energy = StepEnergy(window="steady", window_s=20.0, gpus=8, samples=640,
                            mean_power_w_per_gpu=150.0 + c, output_tok_per_j=0.1,
                            total_tok_per_j=0.5, j_per_output_token=10.0)
        # gpus: the demo's tp 8, as the sweep runner records it (console/bench/gpus.py)
        steps.append(StepResult(index=index, concurrency=c, status="ok", metrics=metrics,
                                energy=energy, gpus=8))
    return steps


@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_pareto_mode_after_a_sweep(snap_compare: Any, app_factory: Any,
                                   size: tuple[int, int]) -> None:
    app = app_factory(points=reference_steps())

    async def press_p(pilot: Any) -> None:
        await _settle(pilot)
        await pilot.press("p")
        await pilot.pause(0.1)
        await pilot.pause()
        chart = pilot.app.get_screen_dashboard().sweep_view
        assert chart.mode == "pareto"

    assert snap_compare(app, terminal_size=size, run_before=press_p)


async def test_p_shows_the_run_on_its_frontier_and_p_again_goes_back(app_factory: Any) -> None:
    app = app_factory(points=reference_steps())
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        chart = app.get_screen_dashboard().sweep_view
        await pilot.press("p")
        await pilot.pause()
        text = chart.render().plain
        assert chart.mode == "pareto"
        assert "total tok/s per GPU (8 GPUs)" in text
        # per-user 1000/TPOT and per-GPU total/8 at 64: 12 and 99; every level is on the
        # frontier (each gives up per-user speed for per-GPU throughput)
        assert "frontier at 1, 4, 16, 32, 64, 128  \u00b7" in text and "64: 12/99" in text
        await pilot.press("p")
        await pilot.pause()
        assert chart.mode == "throughput" and "Pareto" not in chart.render().plain
