"""The simulator's own lateness in ideal-timing mode, this tree against a baseline, same run.

    .venv/bin/python tests/bench/bench_sim_lateness.py [--baseline main] [--concurrency 256,1024]
        [--repeats 3] [--ttft-ms 100] [--itl-ms 100] [--output-len 32] [--rounds 2]
        [--sim-procs N]

Starts two sims in ideal mode side by side: this tree's (`python -m console.sim`, which
measures its lateness itself: console/sim/lateness.py) and the baseline ref's, extracted with
`git archive` and run through tests/bench/sim_lateness_probe.py (the same measurement wrapped
around its writes). At each concurrency, in alternating order, the native engine's worker pool
(this tree's) opens C connections (a warmup of C short requests), the sim's counters are reset,
then C x rounds requests stream. Printed per run and as medians over the repeats: first-token
lateness p50/p99 (write time minus created + TTFT), per-chunk lateness p99 (oldest new token),
the client's TTFT p50 error, and the sim's CPU per streamed token (µs). Lateness is the sim's
alone; on a loaded machine both trees see the same load, so read the ratios.

`--sim-procs N` serves this tree's sim from N processes (`--sim-ideal-procs`,
console/sim/procs.py; its CPU is summed over them). `--baseline this` makes the peer this
tree's sim with one process, so the run compares N processes against one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from console.bench.metrics import step_metrics  # noqa: E402
from console.bench.native import WorkerPool  # noqa: E402
from console.bench.workload import Workload  # noqa: E402
from tests.support.ideal_sim import add_ideal_load_args, start_ideal_sim  # noqa: E402
from tests.support.sim_fixtures import free_port  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")


def _cpu_s(pid: int) -> float:
    """User+sys CPU of the sim: its process and its `--sim-ideal-procs` children."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    total = 0.0
    for each in (pid, *map(int, children)):
        fields = Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / CLK_TCK
    return total


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as resp:
        return json.loads(resp.read())


def _extract(ref: str, into: Path) -> str:
    """The baseline's console/ into INTO: from git, or copied where REF is a directory holding
    such a tree (the device machine has no git)."""
    if Path(ref).is_dir():
        shutil.copytree(Path(ref) / "console", into / "console")
        return Path(ref).name
    short = subprocess.run(["git", "rev-parse", "--short", ref], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.strip()
    archive = subprocess.run(["git", "archive", ref, "console"], cwd=ROOT, check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return short


async def _measure(pool: WorkerPool, url: str, pid: int, conc: int,
                   args: argparse.Namespace) -> dict[str, float]:
    warm = Workload(endpoint="generate", input_len=args.input_len, output_len=2)
    work = Workload(endpoint="generate", input_len=args.input_len, output_len=args.output_len)
    await pool.run(url, warm, conc, prompts=conc, seconds=None, timeout_s=300, seed=1)
    _get(url + "/_sim/lateness?reset=1")
    cpu0 = _cpu_s(pid)
    records, _, workers = await pool.run(url, work, conc, prompts=conc * args.rounds,
                                         seconds=None, timeout_s=300, seed=2)
    cpu = _cpu_s(pid) - cpu0
    lat = _get(url + "/_sim/lateness?reset=1")
    metrics = step_metrics(records, conc, workers=workers)
    tokens = max(1, metrics.output_tokens)
    return {
        "first_p50": lat["first_token"]["p50_ms"],
        "first_p99": lat["first_token"]["p99_ms"],
        "chunk_p99": lat["chunk"]["p99_ms"],
        "ttft_err": (metrics.ttft_ms.p50 - args.ttft_ms) / args.ttft_ms * 100,
        "cpu_us_tok": cpu / tokens * 1e6,
        "errors": metrics.errors,
    }


COLUMNS = ("first_p50", "first_p99", "chunk_p99", "ttft_err", "cpu_us_tok")


def _row(label: str, conc: int, m: dict[str, float]) -> str:
    return (f"| {conc} | {label} | {m['first_p50']:.2f} | {m['first_p99']:.2f} "
            f"| {m['chunk_p99']:.2f} | {m['ttft_err']:+.2f}% | {m['cpu_us_tok']:.1f} |")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", default="main")
    add_ideal_load_args(parser, [256, 1024])
    parser.add_argument("--sim-procs", type=int, default=1,
                        help="processes serving this tree's sim (--sim-ideal-procs)")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="plateau-late-"))
    this = [sys.executable, "-m", "console.sim"]
    this_name = "this" if args.sim_procs == 1 else f"this x{args.sim_procs}"
    if args.baseline == "this":
        baseline = ("this x1", this, ROOT)
    else:
        base_tree = tmp / "baseline"
        base_tree.mkdir()
        short = _extract(args.baseline, base_tree)
        probe = str(Path(__file__).with_name("sim_lateness_probe.py"))
        baseline = (f"{args.baseline}@{short}", [sys.executable, probe, str(base_tree)],
                    base_tree)
    sims = {}
    procs = []
    try:
        for index, (name, argv, cwd) in enumerate(((this_name, this, ROOT), baseline)):
            port = free_port()
            extra = ["--sim-ideal-procs", str(args.sim_procs)] if index == 0 else []
            proc = start_ideal_sim(port, args.ttft_ms, args.itl_ms, tmp / f"gpu-{index}.json",
                                   program=argv, cwd=cwd, extra_args=extra)
            procs.append(proc)
            sims[name] = (f"http://127.0.0.1:{port}", proc.pid)
        print(f"# ideal mode TTFT {args.ttft_ms:g} ms ITL {args.itl_ms:g} ms, output "
              f"{args.output_len}, {args.rounds} rounds; this sim: {args.sim_procs} process(es); "
              f"{os.cpu_count()} CPUs; loadavg "
              f"{os.getloadavg()[0]:.2f}", flush=True)
        results: dict[tuple[str, int], list[dict[str, float]]] = {}
        names = list(sims)
        with WorkerPool() as pool:
            for rep in range(args.repeats):
                for conc in args.concurrency:
                    order = names if rep % 2 == 0 else names[::-1]
                    for name in order:
                        url, pid = sims[name]
                        m = await _measure(pool, url, pid, conc, args)
                        results.setdefault((name, conc), []).append(m)
                        print(f"run {rep + 1} {_row(name, conc, m)} errors {m['errors']:g}"
                              f" loadavg {os.getloadavg()[0]:.2f}", flush=True)
        print("\nmedians over", args.repeats, "runs (ms unless said)")
        print("| C | sim | first-token late p50 | first p99 | chunk p99 | client TTFT p50 err "
              "| sim CPU µs/token |")
        print("|---:|---|---:|---:|---:|---:|---:|")
        for conc in args.concurrency:
            for name in names:
                runs = results[(name, conc)]
                med = {k: statistics.median(r[k] for r in runs) for k in COLUMNS}
                print(_row(name, conc, med))
        print("\nratios this / baseline (medians)")
        for conc in args.concurrency:
            this_runs = results[(names[0], conc)]
            base_runs = results[(names[1], conc)]
            parts = []
            for key in ("first_p50", "first_p99", "chunk_p99", "cpu_us_tok"):
                a = statistics.median(r[key] for r in this_runs)
                b = statistics.median(r[key] for r in base_runs)
                parts.append(f"{key} {a / b:.2f}" if b else f"{key} n/a")
            print(f"C={conc}: " + ", ".join(parts))
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


if __name__ == "__main__":
    asyncio.run(main())
