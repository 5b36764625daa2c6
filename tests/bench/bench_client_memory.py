"""A load worker's peak memory: this tree's worker vs the one before issue 19 item 2.

    .venv/bin/python tests/bench/bench_client_memory.py [--concurrency 64] [--input-len 1024]
        [--output-len 1024] [--rounds 1] [--itl-ms 10] [--ttft-ms 50] [--baseline REV|none]
        [--workloads random,multi-turn --turns 4]

Starts `python -m console.sim` in ideal-timing mode (TTFT and ITL fixed, no model), then runs
ONE load worker (console.bench.worker.run_job, the same code the native engine's worker
processes run) in its own fresh interpreter per client, one after the other against the same
sim, with C closed-loop streams and C x rounds requests on /generate. Each prints its peak
RSS (getrusage ru_maxrss) and its RSS before the job, so the job's own growth is visible.
The baseline is the same worker from REV (default: the commit before console/bench/sse.py
gained StreamParser), extracted with `git archive`; it kept every chunk's bytes until the
step ended (658 MB at 1024/1024, C=64 in the issue).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.support.ideal_sim import start_ideal_sim  # noqa: E402
from tests.support.sim_fixtures import free_port  # noqa: E402

# Runs inside the measured interpreter, with PYTHONPATH at the tree under test.
_DRIVER = """
import asyncio, json, resource, sys, time
from console.bench.worker import Job, new_session, run_job
from console.bench.workload import Workload

def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024

async def main(url, c, n, inp, out, extra="{}"):
    wl = Workload(endpoint="generate", input_len=inp, output_len=out, **json.loads(extra))
    before = rss_mb()
    cpu0 = time.process_time()
    session = new_session(600)
    job = Job(base_url=url, workload=wl, streams=c, prompts=n,
              start_at_ns=time.perf_counter_ns(), deadline_ns=None, timeout_s=600, seed=1)
    t0 = time.perf_counter()
    records = await run_job(job, session)
    wall = time.perf_counter() - t0
    await session.close()
    ok = sum(1 for r in records if r.ok)
    tokens = sum(r.output_tokens for r in records if r.ok)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    prompt = sum(r.prompt_tokens for r in records if r.ok)
    print(json.dumps({"before_mb": before, "peak_mb": peak, "ok": ok, "requests": len(records),
                      "tokens": tokens, "wall_s": wall, "cpu_s": time.process_time() - cpu0,
                      "prompt_tokens": prompt}))

asyncio.run(main(sys.argv[1], *map(int, sys.argv[2:6]), *sys.argv[6:]))
"""


def _default_baseline() -> str:
    """The commit before the one that introduced StreamParser (the incremental parser)."""
    found = subprocess.run(
        ["git", "log", "--format=%H", "-S", "class StreamParser", "--", "console/bench/sse.py"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    return f"{found[-1]}^" if found else "HEAD"


def _extract(rev: str, dest: Path) -> Path:
    archive = subprocess.run(["git", "archive", rev, "console"], cwd=ROOT,
                             capture_output=True, check=True).stdout  # fmt: skip
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(dest, filter="data")
    return dest


def _measure(tree: Path, url: str, args: argparse.Namespace,
             workload: str = "random") -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    argv = [sys.executable, "-c", _DRIVER, url, str(args.concurrency),
            str(args.concurrency * args.rounds), str(args.input_len), str(args.output_len)]
    if workload != "random":  # a tree from before workload kinds takes no extra argument
        argv.append(json.dumps({"kind": workload, "turns": args.turns}))
    out = subprocess.run(argv, env=env, cwd=tree, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"worker run in {tree} failed: {out.stderr.strip()[-500:]}")
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--input-len", type=int, default=1024)
    parser.add_argument("--output-len", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=1, help="requests = C x rounds")
    parser.add_argument("--ttft-ms", type=float, default=50.0)
    parser.add_argument("--itl-ms", type=float, default=10.0)
    parser.add_argument("--baseline", default=None, help="git revision, or 'none'")
    parser.add_argument("--workloads", default="random",
                        help="this tree's worker per workload kind, e.g. random,multi-turn "
                        "(multi-turn: --turns turns a conversation, each carrying the "
                        "previous answers; use --rounds >= --turns)")
    parser.add_argument("--turns", type=int, default=4)
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="plateau-mem-"))
    kinds = args.workloads.split(",")
    trees = [(f"this tree, {kind}", ROOT, kind) for kind in kinds]
    if args.baseline != "none":
        rev = args.baseline or _default_baseline()
        short = subprocess.run(["git", "rev-parse", "--short", rev], cwd=ROOT, text=True,
                               capture_output=True, check=True).stdout.strip()  # fmt: skip
        trees.append((f"baseline {short}", _extract(rev, tmp / "baseline"), "random"))
    port = free_port()
    sim = start_ideal_sim(port, args.ttft_ms, args.itl_ms, tmp / "gpu.json")
    url = f"http://127.0.0.1:{port}"
    results = []
    try:
        print(f"# sim ideal mode: TTFT {args.ttft_ms} ms, ITL {args.itl_ms} ms; /generate "
              f"{args.input_len} in / {args.output_len} out; C={args.concurrency}, "
              f"{args.concurrency * args.rounds} requests; {os.cpu_count()} CPU(s)", flush=True)
        for label, tree, kind in trees:
            results.append((label, _measure(tree, url, args, kind)))
            print(f"{label}: {results[-1][1]}", flush=True)
    finally:
        sim.terminate()
        sim.wait(timeout=30)

    print()
    print("| client | RSS before job MB | peak RSS MB | growth MB | ok/requests | tokens "
          "| prompt tokens | CPU s | wall s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label, r in results:
        print(f"| {label} | {r['before_mb']:.1f} | {r['peak_mb']:.1f} | "
              f"{r['peak_mb'] - r['before_mb']:.1f} | {r['ok']:.0f}/{r['requests']:.0f} | "
              f"{r['tokens']:.0f} | {r.get('prompt_tokens', 0):.0f} | "
              f"{r.get('cpu_s', 0):.2f} | {r['wall_s']:.1f} |")
    if len(results) == 2 and len(kinds) == 2:
        (_, a), (_, b) = results
        print(f"\n{kinds[1]}/{kinds[0]}: peak RSS {b['peak_mb'] / a['peak_mb']:.3f}, "
              f"CPU {b['cpu_s'] / a['cpu_s']:.3f}")
    elif len(results) == 2:
        (_, new), (_, old) = results
        growth = (new["peak_mb"] - new["before_mb"]) / max(old["peak_mb"] - old["before_mb"], 1e-9)
        print(f"\npeak RSS ratio this/baseline: {new['peak_mb'] / old['peak_mb']:.3f}; "
              f"growth ratio: {growth:.3f}")


if __name__ == "__main__":
    main()
