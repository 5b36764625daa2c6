"""Plateau's client vs bench_serving in interleaved pairs (rig.sh 3): one row a pair, the ratio of
the pair's total tok/s, and the prompt tokens each client sent.

    python tests/bench/real_engine/client_pairs.py DIR
    (DIR holds bench_serving.jsonl and plateau_r*_c*.json)

bench_serving appends one JSON line a run, in the order the rig ran them; the rig ran the same
(repeat, concurrency) order for Plateau's files, so the n-th line pairs with the n-th file in
(repeat, concurrency) order.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path


def _plateau_runs(folder: Path) -> list[tuple[int, int, dict[str, float]]]:
    runs = []
    for path in folder.glob("plateau_r*_c*.json"):
        match = re.fullmatch(r"plateau_r(\d+)_c(\d+)\.json", path.name)
        if match is None:
            continue
        metrics = json.loads(path.read_text())["steps"][0]["metrics"]
        runs.append((int(match[1]), int(match[2]), metrics))
    return sorted(runs, key=lambda run: (run[0], run[1]))


def main(folder: Path) -> int:
    lines = (folder / "bench_serving.jsonl").read_text().splitlines()
    bench = [json.loads(line) for line in lines if line]
    ours = _plateau_runs(folder)
    print("| repeat | c | first | bench_serving tok/s | Plateau tok/s | Plateau / bench"
          " | prompt tokens (bench / Plateau) |")
    print("| ---: | ---: | --- | ---: | ---: | ---: | --- |")
    ratios = []
    for (repeat, conc, metrics), run in zip(ours, bench, strict=False):
        if run["max_concurrency"] != conc:
            raise SystemExit(f"pairing broke at repeat {repeat} c={conc}")
        ratio = metrics["total_tok_s"] / run["total_throughput"] - 1
        ratios.append(ratio)
        first = "bench_serving" if repeat % 2 else "Plateau"
        print(f"| {repeat} | {conc} | {first} | {run['total_throughput']:.1f}"
              f" | {metrics['total_tok_s']:.1f} | {ratio:+.1%}"
              f" | {run['total_input_tokens']} / {metrics['input_tokens']} |")
    if ratios:
        print(f"\npairs {len(ratios)}; median {statistics.median(ratios):+.1%}; "
              f"range {min(ratios):+.1%} .. {max(ratios):+.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
