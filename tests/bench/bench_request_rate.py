"""Request-rate agreement: Plateau's native open loop vs SGLang 0.5.23's bench_serving
(`--request-rate`, unmodified, through tests/support/sglang_bench.py), same server.

    .venv/bin/python tests/bench/bench_request_rate.py [--rates 40,inf] [--prompts 64]
        [--speed 1] [--workloads random,shared-prefix]

Starts the simulator (model-driven, --sim-speed SPEED), then per workload and rate runs the
two clients native, bench_serving, bench_serving, native (the GPU's slow drift then weighs on
both alike) and prints their mean total tok/s and req/s with the difference. Rates above the
server's capacity measure the server; below it, the arrival draw (about 1/sqrt(N)).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from console.bench.bench_serving import BenchServingEngine  # noqa: E402
from console.bench.engines import NativeEngine  # noqa: E402
from console.bench.models import StepMetrics  # noqa: E402
from console.bench.sweep import run_sweep  # noqa: E402
from console.config_models import SweepPreset  # noqa: E402
from console.host.local import LocalTransport  # noqa: E402
from tests.support.ideal_sim import wait_ready  # noqa: E402
from tests.support.sglang_bench import SHIM_PATH  # noqa: E402
from tests.support.sim_fixtures import free_port  # noqa: E402
from tests.support.tokenizer import build_tokenizer  # noqa: E402


async def _one(engine: str, spec: SweepPreset, url: str, tok: Path,
               tmp: Path) -> StepMetrics:
    if engine == "native":
        eng: object = NativeEngine(max_workers=1)
    else:
        spec = spec.model_copy(update={"engine": "bench-serving"})
        eng = BenchServingEngine(LocalTransport(), host_base_url=url,
                                 command=[sys.executable, str(SHIM_PATH)], tokenizer=str(tok),
                                 workdir=str(tmp))
    outcome = await run_sweep(spec, url, engine=eng, snapshot_server_info=False)  # type: ignore[arg-type]
    step = outcome.steps[0]
    if step.metrics is None:
        raise SystemExit(f"{engine}: {step.error}")
    return step.metrics


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rates", default="40,inf")
    p.add_argument("--prompts", type=int, default=64)
    p.add_argument("--speed", default="1")
    p.add_argument("--workloads", default="random,shared-prefix")
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="plateau-rate-"))
    tok = build_tokenizer(tmp / "tok")
    port = free_port()
    sim = subprocess.Popen([sys.executable, "-m", "console.sim", "--model-path", "test-model",
                            "--port", str(port), "--sim-startup-seconds", "0",
                            "--sim-speed", args.speed, "--sim-state-file",
                            str(tmp / "gpu.json")], cwd=ROOT, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    print("| workload | rate | native tok/s | bench_serving tok/s | diff | native req/s "
          "| bench_serving req/s |")
    print("|---|---|---:|---:|---:|---:|---:|")
    try:
        wait_ready(url, sim)
        for workload in args.workloads.split(","):
            for rate in (float(r) for r in args.rates.split(",")):
                spec = SweepPreset(concurrency=[1], request_rate=[rate],
                                   num_prompts=args.prompts, input_len=64 if workload ==
                                   "shared-prefix" else 256, output_len=64, workload=workload,
                                   prefix_groups=8, prompts_per_group=8, prefix_len=1024)
                runs = [await _one(e, spec, url, tok, tmp)
                        for e in ("native", "bench", "bench", "native")]
                nat, ben = (runs[0], runs[3]), (runs[1], runs[2])
                a = statistics.fmean(m.total_tok_s for m in nat)
                b = statistics.fmean(m.total_tok_s for m in ben)
                print(f"| {workload} | {rate:g} | {a:,.0f} | {b:,.0f} | {(a / b - 1) * 100:+.2f}% "
                      f"| {statistics.fmean(m.request_per_s for m in nat):.2f} "
                      f"| {statistics.fmean(m.request_per_s for m in ben):.2f} |", flush=True)
    finally:
        sim.terminate()
        sim.wait(timeout=30)


if __name__ == "__main__":
    asyncio.run(main())
