"""The sweep chart's SLO mark and Pareto mode (issue 29.1-2), drawn from a real sweep of the
simulator, and the Pareto points/frontier they come from."""

from __future__ import annotations

import pytest
from rich.style import Style
from textual.app import App, ComposeResult

from console.app.bindings import ACTIONS
from console.bench.engines import NativeEngine
from console.bench.models import StepResult
from console.bench.pareto import ParetoPoint, frontier, gpus_serving, pareto_json, pareto_points
from console.bench.slo import parse_slo, slo_knee
from console.bench.sweep import run_sweep
from console.config_models import SweepPreset
from tests.support.sim_fixtures import SimFactory
from widgets.pareto_chart import render_pareto
from widgets.sweep_chart import ChartRun, SweepChart, render_chart

COLOURS = [Style(color="#5B9BD5"), Style(color="#E5A84B"), Style(color="#B48EDC")]


async def _real_steps(sim_factory: SimFactory) -> list[StepResult]:
    """A sweep of a simulator that queues above two running requests, with a TTFT SLO."""
    sim = sim_factory("--max-running-requests", "2", "--sim-speed", "8", "--sim-seed", "3")
    spec = SweepPreset(concurrency=[1, 2, 4, 8], input_len=32, output_len=8,
                       prompts_per_concurrency=2, slo=parse_slo("e2e_p99_ms=100000"))
    outcome = await run_sweep(spec, sim.base_url, engine=NativeEngine())
    steps = list(outcome.steps)
    assert [s.status for s in steps] == ["ok"] * 4
    return steps


def test_the_frontier_keeps_what_nothing_beats_on_both_axes() -> None:
    pts = [ParetoPoint(1, 100, 10), ParetoPoint(2, 90, 30), ParetoPoint(4, 80, 25),
           ParetoPoint(8, 40, 60), ParetoPoint(16, 40, 50)]
    assert [p.concurrency for p in frontier(pts)] == [8, 2, 1]
    assert pareto_json(pts)["frontier"] == [{"run_id": None, "concurrency": c}
                                            for c in (8, 2, 1)]
    assert gpus_serving({"tp_size": 4, "dp_size": 2}) == 8
    assert gpus_serving({"tp_size": 8, "dp_size": 8, "enable_dp_attention": True}) == 8
    assert gpus_serving(None) == 1


async def test_pareto_points_and_the_chart_modes_from_a_real_sweep(sim_factory: SimFactory) -> None:
    steps = await _real_steps(sim_factory)
    points = pareto_points(steps, gpus=2)
    assert [p.concurrency for p in points] == [1, 2, 4, 8]
    for point, step in zip(points, steps, strict=True):
        assert step.metrics is not None and step.metrics.tpot_ms.p50
        # Per user: the median request's decode rate; per GPU: headline total over 2 GPUs.
        assert point.per_user_tok_s == pytest.approx(1000 / step.metrics.tpot_ms.p50)
        assert point.per_gpu_tok_s == pytest.approx(step.metrics.headline_total_tok_s() / 2)
    front = frontier(points)
    # The best point on each axis is on the frontier, and nothing on it is beaten.
    assert max(points, key=lambda p: p.per_user_tok_s) in front
    assert max(points, key=lambda p: p.per_gpu_tok_s) in front
    assert not any(q.dominates(p) for p in front for q in points)
    text = render_pareto([("live", steps)], [], 100, 16, COLOURS).plain
    assert "per-user output tok/s" in text and "total tok/s per server" in text
    on = ", ".join(str(p.concurrency) for p in points if p in front)
    assert f"frontier at {on}" in text
    # Stored runs of the host widen the frontier: a better point from history takes over.
    best = ParetoPoint(99, max(p.per_user_tok_s for p in points) * 2,
                       max(p.per_gpu_tok_s for p in points) * 2, run_id=7)
    text = render_pareto([("live", steps)], [best], 100, 16, COLOURS).plain
    assert "1 stored point(s) of this host" in text and "(none on the frontier)" in text
    # Throughput mode: the SLO said in the knee line and marked on the plot.
    knee = slo_knee(steps, {"e2e_p99_ms": 100000.0})
    chart = render_chart([ChartRun("live", steps)], 120, 16, COLOURS).plain
    assert knee.sentence == "meets the SLO at every level (up to 8)"
    assert "meets the SLO at every level (up to 8), best goodput" in chart
    assert "\u2506 SLO met up to 8" in chart


async def test_the_chart_cycles_into_pareto_and_back() -> None:
    class One(App[None]):
        def compose(self) -> ComposeResult:
            yield SweepChart(id="chart")

    from tests.support.bench_fixtures import fake_step

    async with One().run_test(size=(100, 20)) as pilot:
        chart = pilot.app.query_one(SweepChart)
        chart.set_runs([("A", [fake_step(1, 100), fake_step(4, 300)])])
        assert chart.mode == "throughput"
        assert chart.cycle_mode() == "pareto"
        assert "Pareto:" in chart.render().plain
        assert chart.cycle_mode() == "throughput"
        assert "tok/s vs concurrency" in chart.render().plain
    spec = next(a for a in ACTIONS if a.id == "chart-mode")
    assert spec.keys == "p" and spec.action == "chart_mode"
    assert sum(a.keys.split(",").count("p") for a in ACTIONS) == 1  # p is nobody else's
