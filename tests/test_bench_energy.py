"""Energy per token (issue 29.3): a sweep of the simulator with the GPU agent (sim backend,
reading the simulator's GPU state) sampling power, each step's energy over its steady window,
stored per step, priced by `[cost]`."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pytest

from console.bench.energy import J_PER_KWH, cost_per_million_output, step_energy
from console.bench.engines import NativeEngine
from console.bench.models import StepResult, SweepFinished
from console.bench.summary import run_summary
from console.bench.sweep import run_sweep
from console.config_models import CostConfig, SweepPreset
from console.diagnose.recorder import EvidenceRecorder
from console.diagnose.sources import EvidenceSources
from console.gpu.collector import AgentOptions, GpuCollector
from console.host.local import LocalTransport
from console.store.db import RunStore


async def _sweep_with_power(sim, db: Path) -> tuple[SweepFinished, RunStore]:  # type: ignore[no-untyped-def]
    transport = LocalTransport("sim")
    await transport.connect()
    collector = GpuCollector(transport, AgentOptions(
        backend="sim", interval=0.25, python=sys.executable, sim_state=str(sim.state_file)))
    store = RunStore(db)
    recorder = EvidenceRecorder(EvidenceSources(gpu=collector), store=store)
    spec = SweepPreset(concurrency=[1, 16], input_len=64, output_len=96,
                       prompts_per_concurrency=3, flush_cache=False)
    outcome = await run_sweep(spec, sim.base_url, engine=NativeEngine(), store=store,
                              recorder=recorder)
    return outcome, store


@pytest.mark.slow
async def test_each_step_has_its_power_and_joules_per_token(sim_factory, bench_db) -> None:
    sim = sim_factory("--sim-speed", "2", "--sim-seed", "4")
    outcome, store = await _sweep_with_power(sim, bench_db)
    try:
        stored = store.get_run(outcome.run_id or 0).steps
        evidence = store.load_evidence(outcome.run_id or 0)
    finally:
        store.close()
    steps: list[StepResult] = list(outcome.steps)
    assert [s.status for s in steps] == ["ok", "ok"]
    assert stored == steps  # energy survives the database
    assert evidence is not None
    for step, seen in zip(steps, evidence.steps, strict=True):
        energy, m = step.energy, step.metrics
        assert energy is not None and m is not None, step
        gpus = {g.index for g in seen.gpu}
        assert energy.gpus == len(gpus) and energy.samples >= len(gpus)
        # The power is the agent's: within what it reported during the step.
        watts = [g.power_w for g in seen.gpu if g.power_w is not None]
        assert min(watts) <= energy.mean_power_w_per_gpu <= max(watts)
        total_w = energy.mean_power_w_per_gpu * energy.gpus
        window_tok_s = m.steady.output_tok_s if energy.window == "steady" and m.steady \
            else m.output_tok_s
        assert energy.output_tok_per_j == pytest.approx(window_tok_s / total_w)
        assert energy.j_per_output_token == pytest.approx(1 / energy.output_tok_per_j)
        assert energy.total_tok_per_j > energy.output_tok_per_j  # prompts count in total
        # Same as recomputing it from the stored samples (what history/compare read back).
        again = step_energy(step, [(g.t, g.index, g.power_w) for g in seen.gpu])
        assert again == energy
    low, high = steps[0].energy, steps[1].energy
    assert low is not None and high is not None
    # Batching: 16 streams share one GPU's draw, so each token costs fewer joules.
    assert high.j_per_output_token is not None and low.j_per_output_token is not None
    assert high.j_per_output_token < low.j_per_output_token
    with sqlite3.connect(bench_db) as raw:
        column = [r[0] for r in raw.execute(
            "SELECT j_per_output_token FROM steps ORDER BY idx")]
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
