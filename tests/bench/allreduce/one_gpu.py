"""The all-reduce probe on a GPU box, for the closing note (issue 39). Run from the repository
root: `python3 tests/bench/allreduce/one_gpu.py --out DIR` (torch with CUDA on the box; no
Plateau install needed: the probe is console/gpu/allreduce_probe.py, standard library + torch).

It runs the probe at the demo model's decode messages (hidden 7168 x the layout duel's levels
16 and 64 x bf16) over every GPU count up to 8, writes the probe's JSON to DIR/allreduce.json
and prints a summary. With one GPU the probe says plainly what it cannot measure (any NCCL or
one-shot all-reduce over 2, 4 or 8 GPUs) and measures what it can: the message sizes, a 1-rank
NCCL all-reduce's floor (eager and in a CUDA graph), the device's copy bandwidth and a kernel
launch's floor.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PROBE = ROOT / "console" / "gpu" / "allreduce_probe.py"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--out", default=".", help="directory for allreduce.json")
    p.add_argument("--hidden", type=int, default=7168)
    p.add_argument("--batches", default="1,16,64,128")
    p.add_argument("--seconds", type=float, default=300.0)
    args = p.parse_args()
    argv = [sys.executable, str(PROBE), "--hidden", str(args.hidden), "--batches", args.batches,
            "--ranks", "2,4,8", "--seconds", f"{args.seconds:g}"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=args.seconds + 60,
                          check=False)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "allreduce.json").write_text(done.stdout)
    (out / "allreduce.stderr").write_text(done.stderr[-20000:])
    if done.returncode != 0 or not done.stdout.strip():
        print(f"probe failed (exit {done.returncode}): {done.stderr.strip()[-500:]}")
        return 1
    report = json.loads(done.stdout.strip().splitlines()[-1])
    print("GPUs:", ", ".join(f"{g['name']} ({g['memory_gib']} GiB)" for g in
                            report.get("gpus", [])) or "none")
    print("torch", report.get("torch"), "NCCL", report.get("nccl"),
          "NVLink:", report["topology"].get("nvlink"))
    for message in report["messages"]:
        print(f"decode message at batch {message['batch']}: {message['bytes']} B")
    single = report.get("single_gpu") or {}
    for row in single.get("nccl_1rank", []):
        print(f"1-rank NCCL all-reduce, {row['bytes']} B: {row.get('eager_us')} us eager, "
              f"{row.get('graph_us', row.get('graph_why'))} us in a graph")
    if single:
        print(f"device copy bandwidth: {single.get('memcpy_d2d_gbps')} GB/s (read + write); "
              f"kernel launch floor: {single.get('kernel_launch_us')} us")
    for ranks in report.get("allreduce", []):
        for row in ranks.get("rows", []):
            print(f"{row['ranks']} GPUs, {row['bytes']} B: NCCL {row.get('nccl_graph_us')} us "
                  f"(graph), {row.get('nccl_eager_us')} us (eager), one-shot "
                  f"{row.get('one_shot_us', row.get('one_shot_why'))}")
        if ranks.get("why"):
            print(f"{ranks['ranks']} GPUs: {ranks['why']}")
    for line in report["cannot"]:
        print("cannot measure:", line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
