"""Open-loop request-rate steps against SGLang 0.5.23's own bench_serving (`--request-rate`,
unmodified, through the torch-free shim), same workload, same simulated server.

The sim runs at --sim-speed 1 (the modelled GPU's own pace) so the server, not either Python
client, sets the pace (at speed 20 SGLang's client is the bottleneck on a loaded 2-core
machine). At a rate above the
server's capacity both clients measure the server: their throughputs must agree within 2%.
Below capacity the throughput is the arrival process's own (N Poisson arrivals vary by about
1/sqrt(N)), which the arrival tests check instead (tests/test_bench_workloads.py).
"""

from __future__ import annotations

import asyncio
import math
import sys
from pathlib import Path

import pytest

from console.bench.bench_serving import BenchServingEngine
from console.bench.engines import NativeEngine
from console.bench.models import StepMetrics
from console.bench.sweep import run_sweep
from console.config_models import SweepPreset
from console.host.local import LocalTransport
from tests.support.sglang_bench import SHIM_PATH
from tests.support.sim_fixtures import SimProcess
from tests.support.tokenizer import build_tokenizer

pytest.importorskip("numpy", reason="needs tests/requirements-bench.txt")
pytest.importorskip("transformers", reason="needs tests/requirements-bench.txt")


def _both(sim: SimProcess, spec: SweepPreset, tmp: Path) -> tuple[StepMetrics, StepMetrics]:
    tok = build_tokenizer(tmp / "tok")

    async def go() -> tuple[StepMetrics, StepMetrics]:
        native = await run_sweep(spec, sim.base_url, engine=NativeEngine(max_workers=1),
                                 snapshot_server_info=False)
        bench = await run_sweep(
            spec.model_copy(update={"engine": "bench-serving"}), sim.base_url,
            engine=BenchServingEngine(LocalTransport(), host_base_url=sim.base_url,
                                      command=[sys.executable, str(SHIM_PATH)],
                                      tokenizer=str(tok), workdir=str(tmp)),
            snapshot_server_info=False)
        a, b = native.steps[0], bench.steps[0]
        assert a.metrics is not None and b.metrics is not None, (a.error, b.error)
        return a.metrics, b.metrics

    return asyncio.run(go())


@pytest.mark.slow
@pytest.mark.parametrize("rate", [40.0, math.inf])
def test_saturating_rate_throughput_agrees_with_bench_serving(
    rate: float, sim_factory, tmp_path: Path
) -> None:
    sim = sim_factory("--sim-speed", "1")
    spec = SweepPreset(concurrency=[1], request_rate=[rate], num_prompts=64, input_len=256,
                       output_len=64)
    native, bench = _both(sim, spec, tmp_path)
    assert native.completed == bench.completed == 64
    assert native.input_tokens == bench.input_tokens == 64 * 256
    assert native.request_rate == bench.request_rate == rate
    assert native.total_tok_s == pytest.approx(bench.total_tok_s, rel=0.02)
    assert native.request_per_s == pytest.approx(bench.request_per_s, rel=0.02)
