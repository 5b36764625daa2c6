"""Which GPUs serve (console/bench/gpus.py): the energy per token sums only their power, says
which it summed, and the chart's per-GPU tok/s divides by the same count as the JSON's.

The simulator runs tp 2 from --base-gpu-id 2 on a host of 8 GPUs (its GPU state puts the load
on GPUs 2 and 3, console/sim/gpu_state.py), and the GPU agent (sim backend) reports all 8."""

from __future__ import annotations

import sys

import pytest
from rich.style import Style

from console.bench.energy import step_energy
from console.bench.engines import NativeEngine
from console.bench.gpus import serving_gpus
from console.bench.models import StepResult
from console.bench.pareto import run_gpus
from console.bench.summary import run_summary
from console.bench.sweep import run_sweep
from console.config_models import SweepPreset
from console.diagnose.recorder import EvidenceRecorder
from console.diagnose.sources import EvidenceSources
from console.gpu.collector import AgentOptions, GpuCollector
from console.host.local import LocalTransport
from tests.support.sim_fixtures import SimFactory
from widgets.pareto_chart import pareto_line, render_pareto
from widgets.sweep_chart import FALLBACK_COLOURS

COLOURS = [Style(color=c) for c in FALLBACK_COLOURS]


@pytest.mark.slow
async def test_energy_counts_the_serving_gpus_and_the_chart_divides_as_the_json(
    sim_factory: SimFactory,
) -> None:
    sim = sim_factory("--tp-size", "2", "--base-gpu-id", "2", "--sim-seed", "4")
    transport = LocalTransport("sim")
    await transport.connect()
    recorder = EvidenceRecorder(EvidenceSources(gpu=GpuCollector(transport, AgentOptions(
        backend="sim", interval=0.25, python=sys.executable, sim_state=str(sim.state_file)))))
    spec = SweepPreset(concurrency=[1, 16], input_len=64, output_len=96,
                       prompts_per_concurrency=3, flush_cache=False)
    outcome = await run_sweep(spec, sim.base_url, engine=NativeEngine(), recorder=recorder)
    steps: list[StepResult] = list(outcome.steps)
    assert [s.status for s in steps] == ["ok", "ok"] and [s.gpus for s in steps] == [2, 2]
    for step in steps:
        energy = step.energy
        assert energy is not None
        assert (energy.counted, energy.gpu_indices, energy.gpus) == ("serving", [2, 3], 2)
        # The old sum over every GPU the agent saw: 8 GPUs, the 6 idle ones' draw in it.
        samples = [(g.t, g.index, g.power_w) for g in recorder.gpu]
        every = step_energy(step, samples)
        assert every is not None and every.counted == "all" and every.gpus == 8
        assert every.j_per_output_token and energy.j_per_output_token
        assert energy.j_per_output_token < every.j_per_output_token
        # Which GPUs serve, unknown: all of them, and the step says so.
        recorder.server_info = None
        unknown = recorder.step_energy(step)
        recorder.server_info = {"tp_size": 2, "base_gpu_id": 2}
        assert unknown is not None and (unknown.counted, unknown.gpus) == ("all", 8)
    summary = run_summary(steps, spec, outcome.run_id)
    assert "energy counts the power of the serving GPUs 2,3" in summary.lines()
    figures = summary.json()
    assert figures["gpus_serving"] == 2 == run_gpus(steps)
    # The chart divides by the same 2 GPUs as the JSON (it used to take the agent's 8).
    chart = render_pareto([("live", steps)], [], 120, 16, COLOURS).plain
    assert "total tok/s per GPU (2 GPUs)" in chart
    line = pareto_line([("live", steps)], [], 400).plain
    for point in figures["pareto"]["points"]:
        assert (f"{point['concurrency']}: {point['per_user_tok_s']:,.0f}/"
                f"{point['per_gpu_tok_s']:,.0f}") in line


def test_which_gpus_serve_follows_sglangs_placement() -> None:
    # Ranks on CUDA ordinals base + dp * tp * pp * step + pp_rank * tp + tp_rank * step.
    assert serving_gpus({"tp_size": 2, "dp_size": 2}).indices == (0, 1, 2, 3)
    assert serving_gpus({"tp_size": 2, "base_gpu_id": 4, "gpu_id_step": 2}).indices == (4, 6)
    assert serving_gpus({"tp_size": 4, "pp_size": 2}).indices == tuple(range(8))
    attention = serving_gpus({"tp_size": 4, "dp_size": 4, "enable_dp_attention": True})
    assert (attention.count, attention.indices) == (4, (0, 1, 2, 3))
    # CUDA_VISIBLE_DEVICES maps the ordinals to the agent's indices.
    mapped = serving_gpus({"tp_size": 2}, env={"CUDA_VISIBLE_DEVICES": "4,5,6,7"})
    assert (mapped.indices, mapped.source) == ((4, 5), "server_info, CUDA_VISIBLE_DEVICES")
    # The profile's flags when the server did not say; then the devices listed alone.
    flags = serving_gpus(None, {"tensor-parallel-size": 2, "attn-dp-size": 2, "dp-size": 2})
    assert (flags.count, flags.indices, flags.source) == (2, (0, 1), "profile flags")
    listed = serving_gpus(None, {}, {"CUDA_VISIBLE_DEVICES": "3,1"})
    assert (listed.count, listed.indices) == (2, (3, 1))
    # Only the count where the indices cannot be told.
    assert serving_gpus({"tp_size": 2},
                        env={"CUDA_VISIBLE_DEVICES": "GPU-5e3f,GPU-77aa"}).indices is None
    assert serving_gpus({"tp_size": 8, "nnodes": 2}).indices is None
    assert serving_gpus({"tp_size": 4}, env={"CUDA_VISIBLE_DEVICES": "0,1"}).indices is None
    unknown = serving_gpus(None)
    assert (unknown.count, unknown.indices, unknown.source) == (1, None, "not known")
