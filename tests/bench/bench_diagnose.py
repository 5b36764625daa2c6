"""Benchmark: diagnosing a 10-step run whose steps saw 100k SGLang log lines in all, against
the peer of just parsing those lines (prefix + batch-line parse, nothing else).

Run:  .venv/bin/python tests/bench/bench_diagnose.py [--lines 100000] [--steps 10] [--repeat 5]
Prints the figures and the ratio; the target is < 1 s for the whole diagnosis. Nothing is
asserted here.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from console.bench.models import Distribution, StepMetrics, StepResult
from console.diagnose.diagnose import diagnose
from console.diagnose.evidence import message_of, startup_facts, step_evidence
from console.diagnose.models import RunEvidence
from console.logs.batch_stats import parse_batch_message

STARTUP = [
    "[2026-11-30 19:41:02 TP0] Capture target decode CUDA graph end. bs=[1, 2, 4, 8, 12, 16, "
    "24, 32, 40, 48, 56, 64], elapsed=0.01 s, mem usage=0.51 GB, avail mem=29.40 GB.",
    "[2026-11-30 19:41:02 TP0] max_total_num_tokens=2285358, chunked_prefill_size=8192, "
    "max_prefill_tokens=16384, max_running_requests=4096, context_len=131072, "
    "available_gpu_mem=29.40 GB",
]


def make_lines(rng: random.Random, count: int, running: int, graph: bool) -> list[str]:
    """A step's log: mostly Decode lines, some Prefill and access lines, a few warnings."""
    lines = []
    for i in range(count):
        roll = rng.random()
        if roll < 0.7:
            lines.append(
                f"[2026-11-30 19:42:{i % 60:02d} TP0] Decode batch, #running-req: {running}, "
                f"#token: {running * 300 + i % 97}, token usage: 0.{rng.randint(10, 40)}, "
                f"cuda graph: {graph}, gen throughput (token/s): {rng.uniform(200, 900):.2f}, "
                "#queue-req: 0")
        elif roll < 0.85:
            lines.append(
                f"[2026-11-30 19:42:{i % 60:02d} TP0] Prefill batch, #new-seq: 4, #new-token: "
                f"1024, #cached-token: 0, token usage: 0.20, #running-req: {running}, "
                "#queue-req: 2, #pending-token: 512, cuda graph: True, input throughput "
                "(token/s): 31544.71")
        elif roll < 0.999:
            lines.append(f'[2026-11-30 19:42:{i % 60:02d}] INFO:     127.0.0.1:5{i % 999:03d} - '
                         '"POST /generate HTTP/1.1" 200 OK')
        else:
            lines.append("[2026-11-30 19:42:10 TP0] KV cache pool is full. Retract requests. "
                         "#retracted_reqs: 1, #new_tokens_gained: 300, #new_token_ratio: "
                         "0.5000 -> 0.6000")
    return lines


def make_steps(count: int) -> list[StepResult]:
    steps = []
    for index in range(count):
        c = 2 ** (index + 1)
        total = 100.0 * c if c <= 64 else 100.0 * 64 * 1.05
        steps.append(StepResult(
            index=index, concurrency=c, status="ok", started_at=1000.0 + index * 60,
            finished_at=1000.0 + index * 60 + 59,
            metrics=StepMetrics(concurrency=c, completed=c * 2, total_tok_s=total,
                                output_tok_s=total / 3, measured_concurrency=c * 0.98,
                                itl_ms=Distribution(p50=40.0, p99=55.0))))
    return steps


def peer(lines_by_step: list[list[str]]) -> int:
    """Just parsing: the prefix and every batch line (what any log viewer does)."""
    parsed = 0
    for lines in lines_by_step:
        for line in lines:
            if parse_batch_message(message_of(line)) is not None:
                parsed += 1
    return parsed


def ours(steps: list[StepResult], lines_by_step: list[list[str]]) -> int:
    evidence = RunEvidence(
        steps=[step_evidence(s, lines) for s, lines in zip(steps, lines_by_step, strict=True)],
        startup=startup_facts(STARTUP, None, {"tp-size": 8}))
    return len(diagnose(steps, evidence).causes)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(1)
    steps = make_steps(args.steps)
    per = args.lines // args.steps
    lines_by_step = [make_lines(rng, per, s.concurrency, s.concurrency <= 64) for s in steps]
    ours_s, peer_s = [], []
    for _ in range(args.repeat):  # interleaved: both see the same machine state
        t0 = time.perf_counter()
        causes = ours(steps, lines_by_step)
        ours_s.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        parsed = peer(lines_by_step)
        peer_s.append(time.perf_counter() - t0)
    o, p = statistics.median(ours_s), statistics.median(peer_s)
    print(f"lines: {args.lines:,} over {args.steps} steps; batch lines parsed by the peer: "
          f"{parsed:,}; causes found: {causes}")
    print(f"diagnose (evidence from lines + rules): median {o * 1000:.0f} ms, "
          f"min {min(ours_s) * 1000:.0f} ms (target < 1000 ms)")
    print(f"peer (parse only):                     median {p * 1000:.0f} ms, "
          f"min {min(peer_s) * 1000:.0f} ms")
    print(f"ratio diagnose / parse-only: {o / p:.2f}x")


if __name__ == "__main__":
    main()
