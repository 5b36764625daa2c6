"""Client accuracy: Plateau's native client vs SGLang's bench_serving, same server, same run.

    .venv/bin/python tests/bench/bench_client_accuracy.py [--concurrency 1,64,256,1024]
        [--ttft-ms 100] [--itl-ms 100] [--output-len 32] [--sim-speed-note]

Starts `python -m console.sim` in ideal-timing mode (every request: TTFT exactly A ms, then one
token every B ms, no model, no noise), then at each concurrency runs
  1. the native engine (console.bench, worker processes, aiohttp), and
  2. SGLang 0.5.23's own client (`sglang.benchmark.serving` through the torch-free shim,
     tests/support/sglang_bench.py) driven by Plateau's BenchServingEngine,
and prints p50 TTFT and p50 ITL with their error against the known truth. Both clients run
on this machine against the same server; the error includes the server's own scheduling
delay on a loaded machine, which is the same for both, so compare the two columns.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from console.bench.bench_serving import BenchServingEngine  # noqa: E402
from console.bench.engines import NativeEngine  # noqa: E402
from console.bench.models import StepMetrics  # noqa: E402
from console.bench.sweep import run_sweep  # noqa: E402
from console.config_models import SweepPreset  # noqa: E402
from console.host.local import LocalTransport  # noqa: E402
from tests.support.sglang_bench import SHIM_PATH  # noqa: E402
from tests.support.sim_fixtures import free_port  # noqa: E402
from tests.support.tokenizer import build_tokenizer  # noqa: E402


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def _err(value: float | None, truth: float) -> str:
    if value is None:
        return "n/a"
    return f"{value:8.2f} ({(value - truth) / truth * 100:+6.2f}%)"


async def _one(engine: object, spec: SweepPreset, url: str) -> StepMetrics | None:
    outcome = await run_sweep(spec, url, engine=engine, snapshot_server_info=False)  # type: ignore[arg-type]
    step = outcome.steps[0]
    if step.status != "ok":
        print(f"    step failed: {step.error}", file=sys.stderr)
    return step.metrics


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--concurrency", type=_ints, default=[1, 64, 256, 1024])
    parser.add_argument("--ttft-ms", type=float, default=100.0)
    parser.add_argument("--itl-ms", type=float, default=100.0)
    parser.add_argument("--input-len", type=int, default=64)
    parser.add_argument("--output-len", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2, help="prompts per step = C x rounds")
    parser.add_argument("--warmup", default="c",
                        help="warmup requests per step, same for both clients; 'c' = the "
                        "concurrency (opens the native client's keep-alive connections)")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="plateau-acc-"))
    tokenizer = build_tokenizer(tmp / "tok")
    port = free_port()
    sim = subprocess.Popen(
        [sys.executable, "-m", "console.sim", "--model-path", "test-model", "--port", str(port),
         "--sim-startup-seconds", "0", "--sim-seed", "5",
         "--sim-ideal-ttft-ms", str(args.ttft_ms), "--sim-ideal-itl-ms", str(args.itl_ms),
         "--max-running-requests", "4096", "--sim-state-file", str(tmp / "gpu.json")],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    rows = []
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(url + "/ready", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        transport = LocalTransport("local")
        await transport.connect()
        print(f"# sim ideal mode: TTFT {args.ttft_ms} ms, ITL {args.itl_ms} ms; "
              f"input {args.input_len}, output {args.output_len} tokens; "
              f"{os.cpu_count()} CPU(s); loadavg {os.getloadavg()[0]:.2f}", flush=True)  # fmt: skip
        for conc in args.concurrency:
            spec = SweepPreset(
                concurrency=[conc], input_len=args.input_len, output_len=args.output_len,
                num_prompts=max(4, conc * args.rounds), flush_cache=True,
                warmup_prompts=conc if args.warmup == "c" else int(args.warmup),
            )  # fmt: skip
            t0 = time.monotonic()
            native = await _one(NativeEngine(), spec, url)
            t1 = time.monotonic()
            bench_engine = BenchServingEngine(
                transport, host_base_url=url, command=[sys.executable, str(SHIM_PATH)],
                tokenizer=str(tokenizer), workdir=str(tmp),
            )  # fmt: skip
            bench = await _one(bench_engine, spec.model_copy(update={"engine": "bench-serving"}),
                               url)  # fmt: skip
            t2 = time.monotonic()
            rows.append((conc, native, bench))
            print(f"C={conc}: native {t1 - t0:.1f} s (workers {native and native.workers}), "
                  f"bench_serving {t2 - t1:.1f} s; loadavg {os.getloadavg()[0]:.2f}",
                  flush=True)  # fmt: skip
        await transport.close()
    finally:
        sim.terminate()
        sim.wait(timeout=30)

    print()
    print("| C | truth TTFT ms | native TTFT p50 (err) | bench_serving TTFT p50 (err) "
          "| truth ITL ms | native ITL p50 (err) | bench_serving ITL p50 (err) |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for conc, native, bench in rows:
        print(
            f"| {conc} | {args.ttft_ms:g} "
            f"| {_err(native and native.ttft_ms.p50, args.ttft_ms)} "
            f"| {_err(bench and bench.ttft_ms.p50, args.ttft_ms)} "
            f"| {args.itl_ms:g} "
            f"| {_err(native and native.itl_ms.p50, args.itl_ms)} "
            f"| {_err(bench and bench.itl_ms.p50, args.itl_ms)} |"
        )
    print()
    print("| C | native TTFT p99 | bench_serving TTFT p99 | native ITL p99 "
          "| bench_serving ITL p99 |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|")
    for conc, native, bench in rows:
        print(
            f"| {conc} | {_err(native and native.ttft_ms.p99, args.ttft_ms)} "
            f"| {_err(bench and bench.ttft_ms.p99, args.ttft_ms)} "
            f"| {_err(native and native.itl_ms.p99, args.itl_ms)} "
            f"| {_err(bench and bench.itl_ms.p99, args.itl_ms)} |"
        )
    print()
    for conc, native, bench in rows:
        if native and bench:
            print(f"C={conc}: output tok/s native {native.output_tok_s:,.0f} vs bench_serving "
                  f"{bench.output_tok_s:,.0f}; completed {native.completed} vs {bench.completed}")


if __name__ == "__main__":
    asyncio.run(main())
