"""Client accuracy: Plateau's native client vs SGLang's Rust and Python clients, same server,
same run.

    .venv/bin/python tests/bench/bench_client_accuracy.py [--concurrency 1,64,256,1024]
        [--repeats 3] [--ttft-ms 100] [--itl-ms 100] [--output-len 32] [--no-pin]
        [--clients native,rust,python,native@N] [--native-workers N] [--sim-procs N]

Starts `python -m console.sim` in ideal-timing mode (every request: TTFT exactly A ms, then one
token every B ms, no model, no noise), then at each concurrency, in rotating order, runs
  - native: the native engine (console.bench, worker processes, aiohttp),
  - rust:   SGLang 0.5.23's Rust client (`sglang.benchmark.rust_client`, the compiled
            extension in the wheel, run through tests/support/sglang_rust_bench.py),
  - python: SGLang 0.5.23's Python client (`sglang.benchmark.serving` through the torch-free
            shim, tests/support/sglang_bench.py),
the last two driven by Plateau's BenchServingEngine with the same flags. Printed per run and
as medians over the repeats: TTFT p50 and ITL p99 with their error against the known truth,
and client CPU per streamed token (µs: user+sys of the client's processes from the start of
the measured phase (after the warmup) to their exit, over the tokens of the measured phase;
SGLang's clients also retokenize the output at the end, which is counted).

By default the sim is pinned to CPU 0 and the clients to the others (the issue's setting: the
client on its own core), so the clients compete with each other's work, not the sim's.
`--sim-procs N` serves the sim from N processes (`--sim-ideal-procs`, console/sim/procs.py),
pinned to the first N CPUs, the clients to the rest. The
error includes the sim's own lateness, the same for every client in a run: compare the
columns, and see bench_sim_lateness.py for the sim's share.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from console.bench.bench_serving import BenchServingEngine  # noqa: E402
from console.bench.engines import NativeEngine  # noqa: E402
from console.bench.models import StepMetrics, StepPhase  # noqa: E402
from console.bench.sweep import run_sweep  # noqa: E402
from console.config_models import SweepPreset  # noqa: E402
from console.host.local import LocalTransport  # noqa: E402
from tests.support.ideal_sim import add_ideal_load_args, start_ideal_sim  # noqa: E402
from tests.support.sglang_bench import SHIM_PATH  # noqa: E402
from tests.support.sglang_rust_bench import SHIM_PATH as RUST_SHIM_PATH  # noqa: E402
from tests.support.sim_fixtures import free_port  # noqa: E402
from tests.support.tokenizer import build_tokenizer  # noqa: E402

EngineName = Literal["native", "bench-serving"]  # SweepPreset.engine

CLK_TCK = os.sysconf("SC_CLK_TCK")


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _descendants_cpu_s(exclude: int) -> float:
    """User+sys CPU of this process's live descendants, less `exclude`'s subtree (the sim)."""
    parent: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(entry)] = int(fields[1])
        cpu[int(entry)] = (int(fields[11]) + int(fields[12])) / CLK_TCK
    me = os.getpid()
    total = 0.0
    for pid in parent:
        walk = pid
        while walk not in (0, 1, me, exclude) and walk in parent:
            walk = parent[walk]
        if walk == me and pid != me:
            total += cpu[pid]
    return total


MEASURE_MARK = "Starting main benchmark run"  # both SGLang clients print it after the warmup


async def _one(engine: Any, spec: SweepPreset, url: str,
               sim_pid: int) -> tuple[StepMetrics | None, float]:
    """One step; returns its metrics and the CPU seconds its processes used while measuring
    (from the measure phase / SGLang's "Starting main benchmark run" to their exit)."""
    before = _children_cpu_s()
    at_mark: list[float] = []

    def on_event(event: Any) -> None:
        if isinstance(event, StepPhase) and not at_mark and (
                event.phase == "measure" or MEASURE_MARK in event.detail):
            at_mark.append(_descendants_cpu_s(sim_pid))

    outcome = await run_sweep(spec, url, engine=engine, snapshot_server_info=False,
                              on_event=on_event)
    step = outcome.steps[0]
    if step.status != "ok":
        print(f"    step failed: {step.error}", file=sys.stderr)
    total = _children_cpu_s() - before
    return step.metrics, total - (at_mark[0] if at_mark else 0.0)


def _clients(args: argparse.Namespace, transport: LocalTransport, url: str, tokenizer: Path,
             tmp: Path) -> dict[str, tuple[Callable[[], Any], EngineName]]:
    def external(shim: Path) -> Callable[[], Any]:
        return lambda: BenchServingEngine(
            transport, host_base_url=url, command=[sys.executable, str(shim)],
            tokenizer=str(tokenizer), workdir=str(tmp))  # fmt: skip

    def native(streams: int) -> Callable[[], Any]:
        return lambda: NativeEngine(max_workers=args.native_workers, streams_per_worker=streams)

    every: dict[str, tuple[Callable[[], Any], EngineName]] = {
        "native": (native(args.streams_per_worker), "native"),
        "rust": (external(RUST_SHIM_PATH), "bench-serving"),
        "python": (external(SHIM_PATH), "bench-serving")}
    for name in args.clients:  # native@N: the native engine with N streams per worker
        if name.startswith("native@"):
            every[name] = (native(int(name.split("@", 1)[1])), "native")
    return {name: every[name] for name in args.clients}


def _spec(args: argparse.Namespace, conc: int, engine: EngineName, *, prompts: int | None = None,
          warmup: int | None = None, output_len: int | None = None) -> SweepPreset:
    return SweepPreset(
        concurrency=[conc], input_len=args.input_len,
        output_len=output_len or args.output_len,
        num_prompts=prompts or max(4, conc * args.rounds), flush_cache=True,
        warmup_prompts=conc if warmup is None else warmup, engine=engine,
    )  # fmt: skip


def _pct(value: float | None, truth: float) -> float | None:
    return None if value is None else (value - truth) / truth * 100


def _fmt(value: float | None, unit: str = "%") -> str:
    return "n/a" if value is None else (f"{value:+.1f}%" if unit == "%" else f"{value:.1f}")


async def main() -> None:
    parser = argparse.ArgumentParser()
    add_ideal_load_args(parser, [1, 64, 256, 1024])
    parser.add_argument("--clients", type=lambda t: t.split(","),
                        default=["native", "rust", "python"])
    parser.add_argument("--native-workers", type=int, default=None,
                        help="max native worker processes (default: the CPUs it may run on)")
    parser.add_argument("--streams-per-worker", type=int, default=128,
                        help="native: concurrent streams per worker process (the engine's "
                        "default 128)")
    parser.add_argument("--no-pin", action="store_true",
                        help="do not pin the sim to CPU 0 and the clients to the rest")
    parser.add_argument("--sim-procs", type=int, default=1,
                        help="sim processes (--sim-ideal-procs), pinned to the first N CPUs")
    args = parser.parse_args()

    cpus = sorted(os.sched_getaffinity(0))
    sim_cpus, client_cpus = cpus[:args.sim_procs], cpus[args.sim_procs:]
    pin = not args.no_pin and bool(client_cpus)
    tmp = Path(tempfile.mkdtemp(prefix="plateau-acc-"))
    tokenizer = build_tokenizer(tmp / "tok")
    port = free_port()
    program = [sys.executable, "-m", "console.sim"]
    if pin:
        program = ["taskset", "-c", ",".join(map(str, sim_cpus)), *program]
        os.sched_setaffinity(0, client_cpus)  # this process and every client it starts
    sim = start_ideal_sim(port, args.ttft_ms, args.itl_ms, tmp / "gpu.json", program=program,
                          extra_args=["--sim-ideal-procs", str(args.sim_procs)])
    url = f"http://127.0.0.1:{port}"
    results: dict[tuple[str, int], list[dict[str, float | None]]] = {}
    try:
        transport = LocalTransport("local")
        await transport.connect()
        clients = _clients(args, transport, url, tokenizer, tmp)
        placing = (f"sim ({args.sim_procs} process(es)) on CPU {sim_cpus}, clients on "
                   f"{client_cpus}" if pin else f"{args.sim_procs} sim process(es), unpinned")
        print(f"# sim ideal mode: TTFT {args.ttft_ms:g} ms, ITL {args.itl_ms:g} ms; input "
              f"{args.input_len}, output {args.output_len} tokens, {args.rounds} rounds; "
              f"{len(cpus)} CPU(s), {placing}; loadavg {os.getloadavg()[0]:.2f}", flush=True)
        names = list(clients)
        for rep in range(args.repeats):
            for conc in args.concurrency:
                order = names[rep % len(names):] + names[:rep % len(names)]
                for name in order:
                    make, engine = clients[name]
                    t0 = time.monotonic()
                    metrics, cpu = await _one(make(), _spec(args, conc, engine), url, sim.pid)
                    wall = time.monotonic() - t0
                    if metrics is None:
                        continue
                    tokens = metrics.output_tokens
                    row = {
                        "ttft_p50": _pct(metrics.ttft_ms.p50, args.ttft_ms),
                        "itl_p99": _pct(metrics.itl_ms.p99, args.itl_ms),
                        "ttft_p99": _pct(metrics.ttft_ms.p99, args.ttft_ms),
                        "itl_p50": _pct(metrics.itl_ms.p50, args.itl_ms),
                        "cpu_us_tok": cpu / max(1, tokens) * 1e6,
                    }
                    results.setdefault((name, conc), []).append(row)
                    print(f"run {rep + 1} C={conc} {name:6s} TTFT p50 {_fmt(row['ttft_p50'])} "
                          f"ITL p99 {_fmt(row['itl_p99'])} CPU {row['cpu_us_tok']:.1f} µs/tok "
                          f"({wall:.1f} s, workers {metrics.workers}, completed "
                          f"{metrics.completed}, loadavg {os.getloadavg()[0]:.2f})", flush=True)
        await transport.close()
    finally:
        sim.terminate()
        sim.wait(timeout=30)

    keys = ("ttft_p50", "itl_p99", "ttft_p99", "itl_p50", "cpu_us_tok")
    print(f"\nmedians over {args.repeats} runs: error vs truth (TTFT {args.ttft_ms:g} ms, "
          f"ITL {args.itl_ms:g} ms), client CPU µs per streamed token")
    print("| C | client | TTFT p50 err | ITL p99 err | TTFT p99 err | ITL p50 err | CPU µs/tok |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for conc in args.concurrency:
        for name in clients:
            runs = results.get((name, conc), [])
            med = {k: statistics.median(v for r in runs if (v := r[k]) is not None)
                   if any(r[k] is not None for r in runs) else None for k in keys}
            print(f"| {conc} | {name} | {_fmt(med['ttft_p50'])} | {_fmt(med['itl_p99'])} "
                  f"| {_fmt(med['ttft_p99'])} | {_fmt(med['itl_p50'])} "
                  f"| {_fmt(med['cpu_us_tok'], 'µs')} |")
    if "native" in clients and "rust" in clients:
        print("\nnative / rust (medians of |error|, CPU):")
        for conc in args.concurrency:
            parts = []
            for key in ("ttft_p50", "itl_p99", "cpu_us_tok"):
                a = [abs(v) for r in results.get(("native", conc), []) if (v := r[key]) is not None]
                b = [abs(v) for r in results.get(("rust", conc), []) if (v := r[key]) is not None]
                if a and b and statistics.median(b):
                    parts.append(f"{key} {statistics.median(a) / statistics.median(b):.2f}")
            print(f"C={conc}: " + ", ".join(parts))


if __name__ == "__main__":
    asyncio.run(main())
