"""Benchmark (run it: `python tests/bench/bench_ab_verdict_sim.py [--trials N] [--demo]`): how
often the A/B verdict is right, end to end on the simulator (tests/support/ab_sim.py).

- The pair about 5 % apart, N interleaved 3-repeat A/Bs: the share that says "real" with B
  better (the detection rate; the CI test runs one), the measured deltas and their spread.
- Identical profiles, N interleaved 3-repeat A/Bs: the share of false "real" (at most the
  confidence level's 5 % in the long run).
- With --demo: the wall time of `plateau ab --demo --repeats 3 --interleave` (the reference
  host's model, the quick preset), what a new user waits for.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from console.bench.models import StepResult
from tests.support.ab_sim import (
    FASTER,
    FIVE_PERCENT_SPEC,
    SAME,
    SAME_SPEC,
    SLOWER,
    interleaved_ab,
)


def _throughput(step: StepResult) -> float:
    metrics = step.metrics
    assert metrics is not None
    steady = metrics.steady
    return float(steady.total_tok_s if steady and steady.reached else metrics.total_tok_s)


async def _trials(kind: str, trials: int, root: Path) -> list[tuple[str, float, float]]:
    """(sentence, delta %, seconds) per trial."""
    out = []
    for trial in range(trials):
        started = time.monotonic()
        if kind == "diff":
            result = await interleaved_ab(root, f"diff{trial}", SLOWER, FASTER,
                                          FIVE_PERCENT_SPEC, repeats=3)
        else:
            result = await interleaved_ab(root, f"same{trial}", SAME, SAME, SAME_SPEC,
                                          repeats=3)
        a = [_throughput(s) for s in result.steps_a]
        b = [_throughput(s) for s in result.steps_b]
        delta = (statistics.mean(b) / statistics.mean(a) - 1) * 100
        seconds = time.monotonic() - started
        print(f"  {kind} {trial}: A {[round(x) for x in a]} B {[round(x) for x in b]} "
              f"-> {result.verdict.sentence} ({seconds:.0f} s)", flush=True)
        out.append((result.verdict.sentence, delta, seconds))
    return out


def _demo_wall_time() -> float:
    with tempfile.TemporaryDirectory() as home:
        started = time.monotonic()
        plateau = str(Path(sys.executable).with_name("plateau"))
        subprocess.run([plateau, "ab", "--demo", "--a", "triton-moe",
                        "--b", "cutlass-moe", "--repeats", "3", "--interleave",
                        "--db", f"{home}/history.db"], check=True)
        return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--demo", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        print("about 5 % apart, interleaved, 3 repeats:")
        diff = asyncio.run(_trials("diff", args.trials, root))
        print("identical, interleaved, 3 repeats:")
        same = asyncio.run(_trials("same", args.trials, root))
    detected = sum(s.endswith(": real") and s.startswith("B +") for s, _, _ in diff)
    false_alarms = sum(s.endswith(": real") for s, _, _ in same)
    deltas = [d for _, d, _ in diff]
    print(f"detection: {detected}/{len(diff)} real with B better; delta mean "
          f"{statistics.mean(deltas):+.1f} % (sd {statistics.pstdev(deltas):.1f}); "
          f"{statistics.mean(t for _, _, t in diff):.0f} s per A/B")
    print(f"false alarms: {false_alarms}/{len(same)}; "
          f"{statistics.mean(t for _, _, t in same):.0f} s per A/B")
    if args.demo:
        print(f"plateau ab --demo --repeats 3 --interleave: {_demo_wall_time():.0f} s wall")


if __name__ == "__main__":
    main()
