"""`plateau diagnose --log FILE` end to end on a 1M-line realistic SGLang log, against `plateau
logscan FILE` on the same file in the same run (its peer: the whole-log post-mortem).

The log is bench_logscan_e2e.py's (deterministic, seeded: the launch preamble of a real
capture, then decode/prefill batch lines, access lines, catalogue examples, tracebacks, tqdm
bars, a second launch). Each figure is a fresh process (interpreter start, imports, read,
parse, report to a pipe), the median of --repeat runs, the two commands interleaved so load
changes hit both. The target: diagnose under 5 s on this machine. Nothing is asserted.

    .venv/bin/python tests/bench/bench_diagnose_log.py [--lines 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.bench.bench_logscan_e2e import write_log  # noqa: E402


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{argv[1:3]} failed: {done.stderr.decode()[-500:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    python = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "server.log"
        write_log(log, args.lines)
        size = log.stat().st_size
        diagnose = [python, "-m", "console.cli", "diagnose", "--log", str(log)]
        logscan = [python, "-m", "console.cli", "logscan", str(log)]
        timed(diagnose)  # bytecode compiled, file in the page cache
        times: dict[str, list[float]] = {"diagnose --log": [], "logscan": []}
        for _ in range(args.repeat):
            times["diagnose --log"].append(timed(diagnose))
            times["logscan"].append(timed(logscan))
        report = subprocess.run(diagnose, cwd=ROOT, capture_output=True, text=True,
                                check=False).stdout
    print(f"log: {args.lines} lines, {size / 1e6:.0f} MB; median of {args.repeat}")
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, value in medians.items():
        print(f"  plateau {name:15s} {value:6.2f} s  ({args.lines / value / 1e6:.2f} M lines/s)"
              f"  runs {', '.join(f'{v:.2f}' for v in times[name])}")
    print(f"  ratio diagnose/logscan {medians['diagnose --log'] / medians['logscan']:.2f}")
    print("diagnosis head:\n" + "\n".join(report.splitlines()[:6]))


if __name__ == "__main__":
    main()
