"""Energy per token (issue 29.3): a sweep of the simulator with the GPU agent (sim backend,
reading the simulator's GPU state) sampling power, each step's energy over its steady window,
stored per step, priced by `[cost]`."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from pathlib import Path

import pytest

from console.bench.compare import compare_runs
from console.bench.energy import (
    J_PER_KWH,
    cost_per_million_output,
    energy_change_pct,
    step_energy,
)
from console.bench.engines import NativeEngine
from console.bench.gpus import serving_gpus
from console.bench.models import StepResult, SweepFinished
from console.bench.objective import objective_value
from console.bench.report import compare_table, verdict_report
from console.bench.summary import run_summary
from console.bench.sweep import run_sweep
from console.bench.verdict import judge
from console.config_models import CostConfig, SweepPreset
from console.diagnose.recorder import EvidenceRecorder
from console.diagnose.sources import EvidenceSources
from console.gpu.collector import AgentOptions, GpuCollector
from console.host.local import LocalTransport
from console.share.gather import gather
from console.share.report_md import inert, report_md
from console.store.db import SCHEMA_VERSION, RunStore
from tests.support.sim_fixtures import SimFactory, SimProcess


async def _sweep_with_power(sim: SimProcess, store: RunStore) -> SweepFinished:
    transport = LocalTransport("sim")
    await transport.connect()
    collector = GpuCollector(transport, AgentOptions(
        backend="sim", interval=0.25, python=sys.executable, sim_state=str(sim.state_file)))
    recorder = EvidenceRecorder(EvidenceSources(gpu=collector), store=store)
    spec = SweepPreset(concurrency=[1, 16], input_len=64, output_len=96,
                       prompts_per_concurrency=3, flush_cache=False)
    return await run_sweep(spec, sim.base_url, engine=NativeEngine(), store=store,
                           recorder=recorder)


@pytest.mark.slow
async def test_each_step_has_its_power_and_joules_per_token(
    sim_factory: SimFactory, bench_db: Path
) -> None:
    """Two simulators swept side by side (B serves twice as fast on the same GPUs): each
    step's energy, and B's verdict in throughput and J per token."""
    sim = sim_factory("--sim-speed", "2", "--sim-seed", "4")
    fast = sim_factory("--sim-speed", "4", "--sim-seed", "4")
    with RunStore(bench_db) as store:
        outcome, b_outcome = await asyncio.gather(_sweep_with_power(sim, store),
                                                  _sweep_with_power(fast, store))
        stored = store.get_run(outcome.run_id or 0).steps
        evidence = store.load_evidence(outcome.run_id or 0)
        report = report_md(gather(store, [outcome.run_id or 0, b_outcome.run_id or 0]))
    steps: list[StepResult] = list(outcome.steps)
    assert [s.status for s in steps] == ["ok", "ok"]
    assert stored == steps  # energy survives the database
    assert evidence is not None
    for step, seen in zip(steps, evidence.steps, strict=True):
        energy, m = step.energy, step.metrics
        assert energy is not None and m is not None, step
        # The agent reports all 8 simulated GPUs; the server (tp 1) runs on GPU 0 alone,
        # and only its power is the server's.
        assert {g.index for g in seen.gpu} == set(range(8))
        assert (energy.counted, energy.gpu_indices, energy.gpus) == ("serving", [0], 1)
        assert energy.samples >= 1
        # The power is the agent's: within what it reported for GPU 0 during the step.
        watts = [g.power_w for g in seen.gpu if g.power_w is not None and g.index == 0]
        assert min(watts) <= energy.mean_power_w_per_gpu <= max(watts)
        total_w = energy.mean_power_w_per_gpu * energy.gpus
        window_tok_s = m.steady.output_tok_s if energy.window == "steady" and m.steady \
            else m.output_tok_s
        assert energy.output_tok_per_j == pytest.approx(window_tok_s / total_w)
        assert energy.j_per_output_token == pytest.approx(1 / energy.output_tok_per_j)
        assert energy.total_tok_per_j > energy.output_tok_per_j  # prompts count in total
        # Same as recomputing it from the stored samples (what history/compare read back).
        again = step_energy(step, [(g.t, g.index, g.power_w) for g in seen.gpu],
                            serving_gpus({"tp_size": 1}))
        assert again == energy
        assert objective_value(step, "tok-per-joule") == energy.output_tok_per_j
    low, high = steps[0].energy, steps[1].energy
    assert low is not None and high is not None
    # Batching: 16 streams share one GPU's draw, so each token costs fewer joules.
    assert high.j_per_output_token is not None and low.j_per_output_token is not None
    assert high.j_per_output_token < low.j_per_output_token
    with sqlite3.connect(bench_db) as raw:
        column = [r[0] for r in raw.execute(
            "SELECT j_per_output_token FROM steps WHERE run_id = ? ORDER BY idx",
            (outcome.run_id,))]
    assert column == [low.j_per_output_token, high.j_per_output_token]
    # Priced: electricity per kWh and GPU-hours, per million output tokens.
    cost = CostConfig(electricity_per_kwh=0.20, gpu_hour=2.50)
    priced = cost_per_million_output(steps[1], cost)
    assert priced is not None and high.j_per_output_token is not None and steps[1].metrics
    assert priced.electricity == pytest.approx(high.j_per_output_token * 1e6 / J_PER_KWH * 0.20)
    assert priced.gpu_time == pytest.approx(
        high.gpus * 2.50 / 3600 / steps[1].metrics.headline_output_tok_s() * 1e6)
    figures = run_summary(steps, None, outcome.run_id, cost)
    assert [lv.j_per_output_token for lv in figures.levels] == [
        low.j_per_output_token, high.j_per_output_token]
    assert any(line.startswith("energy: fewest J per output token at 16")
               for line in figures.lines())
    # B against A: the verdict's energy sentence, compare's column, the report's.
    b_steps = list(b_outcome.steps)
    verdict = judge(steps, b_steps)
    joules = energy_change_pct(steps, b_steps, verdict.knee_range)
    assert joules is not None and joules < 0  # the faster server spends less per token
    assert verdict.knee_delta_pct is not None and verdict.knee_delta_pct > 0
    assert verdict.efficiency.startswith(f"B: +{verdict.knee_delta_pct:.1f}% throughput, "
                                         f"\u2212{abs(joules):.1f}% J/token at ")
    assert f"energy: {verdict.efficiency}" in verdict_report(verdict, [])
    table = compare_table(compare_runs(steps, b_steps))
    assert "- J/out tok -" in table  # a group of its own: A, B, delta, delta %
    assert f"energy: {inert(verdict.efficiency)}" in report and "| J/out tok |" in report



def test_a_database_from_before_energy_still_opens_and_reads(tmp_path: Path) -> None:
    """A first-release database: its steps read back with no energy and no goodput, read-only
    (no new columns to read) and once migrated (schema 3 added them, empty)."""
    from tests.support.bench_fixtures import fake_step
    from tests.test_store_db import _V1_SCHEMA

    path = tmp_path / "old.sqlite3"
    step = fake_step(4, 400.0)
    with sqlite3.connect(path) as raw:
        raw.executescript(_V1_SCHEMA)
        raw.execute("INSERT INTO runs (started_at, status) VALUES (1, 'finished')")
        raw.execute("INSERT INTO steps (run_id, idx, concurrency, repeat, status, metrics) "
                    "VALUES (1, 0, 4, 0, 'ok', ?)",
                    (step.metrics.model_dump_json(exclude={"slo"}),))  # type: ignore[union-attr]
        raw.row_factory = sqlite3.Row
        row = raw.execute("SELECT * FROM steps").fetchone()
    unmigrated = RunStore._step(row)  # what a read-only open of it reads
    assert unmigrated.energy is None and unmigrated.metrics == step.metrics
    with RunStore(path) as store:
        (old,) = store.get_run(1).steps
    assert old.energy is None and old.metrics is not None and old.metrics.slo is None
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert raw.execute("SELECT goodput_rps, energy, j_per_output_token FROM steps"
                           ).fetchall() == [(None, None, None)]
