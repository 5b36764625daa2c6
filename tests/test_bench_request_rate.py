"""Open-loop request-rate steps against SGLang 0.5.23's own bench_serving (`--request-rate`,
unmodified, through the torch-free shim), same workload, same simulated server.

The sim runs at --sim-speed 1 (the modelled GPU's own pace) so the server, not either Python
client, sets the pace. At a rate above the server's capacity both clients measure the server:
on a quiet machine they agree within 2% (`tests/bench/bench_request_rate.py` prints the table;
that figure is the benchmark's, not this test's). Beside other tests on 2 loaded cores either
client can fall behind the server (a CI rehearsal saw native 0.73x of bench_serving at rate
40), so this test checks what no machine's speed changes: the same requests and tokens on both
sides, the rate recorded, and both throughputs within 2x of each other, which catches the
errors that matter (total vs output tokens is 5x here, requests vs tokens 320x).
Below capacity the throughput is the arrival process's own (N Poisson arrivals vary by about
1/sqrt(N)), which the arrival tests check instead (tests/test_bench_workloads.py).
"""

from __future__ import annotations

import asyncio
import math
import statistics
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
from tests.support.sim_fixtures import SimFactory, SimProcess
from tests.support.tokenizer import build_tokenizer

pytest.importorskip("numpy", reason="needs tests/requirements-bench.txt")
pytest.importorskip("transformers", reason="needs tests/requirements-bench.txt")


def _abba(sim: SimProcess, spec: SweepPreset,
          tmp: Path) -> tuple[list[StepMetrics], list[StepMetrics]]:
    """native, bench_serving, bench_serving, native: the simulated GPU's slow drift
    (console/sim/noise.py) then weighs on both clients alike."""
    tok = build_tokenizer(tmp / "tok")

    async def one(engine: str) -> StepMetrics:
        if engine == "native":
            outcome = await run_sweep(spec, sim.base_url, engine=NativeEngine(max_workers=1),
                                      snapshot_server_info=False)
        else:
            outcome = await run_sweep(
                spec.model_copy(update={"engine": "bench-serving"}), sim.base_url,
                engine=BenchServingEngine(LocalTransport(), host_base_url=sim.base_url,
                                          command=[sys.executable, str(SHIM_PATH)],
                                          tokenizer=str(tok), workdir=str(tmp)),
                snapshot_server_info=False)
        step = outcome.steps[0]
        assert step.metrics is not None, step.error
        return step.metrics

    async def go() -> tuple[list[StepMetrics], list[StepMetrics]]:
        runs = [await one(e) for e in ("native", "bench", "bench", "native")]
        return [runs[0], runs[3]], [runs[1], runs[2]]

    return asyncio.run(go())


@pytest.mark.slow
@pytest.mark.parametrize("rate", [40.0, math.inf])
def test_saturating_rate_throughput_agrees_with_bench_serving(
    rate: float, sim_factory: SimFactory, tmp_path: Path
) -> None:
    sim = sim_factory("--sim-speed", "1")
    spec = SweepPreset(concurrency=[1], request_rate=[rate], num_prompts=48, input_len=256,
                       output_len=64)
    natives, benches = _abba(sim, spec, tmp_path)
    for m in (*natives, *benches):
        assert m.completed == 48 and m.input_tokens == 48 * 256 and m.request_rate == rate
    native = statistics.fmean(m.total_tok_s for m in natives)
    bench = statistics.fmean(m.total_tok_s for m in benches)
    assert 0.5 < native / bench < 2.0, (native, bench)
    native_rps = statistics.fmean(m.request_per_s for m in natives)
    bench_rps = statistics.fmean(m.request_per_s for m in benches)
    assert 0.5 < native_rps / bench_rps < 2.0, (native_rps, bench_rps)
    # Tokens per request, which no machine's speed changes, agree exactly.
    assert native / native_rps == pytest.approx(bench / bench_rps, rel=0.01)
