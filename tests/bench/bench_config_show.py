"""`plateau config show` against configs of N hosts: time per host must stay flat (linear).

Before the fix, 500 hosts took 17 s and 2,000 hosts 282 s (each value rescanned the file).
Prints seconds for each size and the per-host ratio of the largest to the smallest size in the
same run (about 1.0 when linear; 4.0 would be quadratic over a 4x size step).

    .venv/bin/python tests/bench/bench_config_show.py [--sizes 500,2000]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from console.cli import main
from tests.support.many_hosts import config_text


def seconds_for(hosts: int, directory: Path) -> float:
    path = directory / f"hosts-{hosts}.toml"
    path.write_text(config_text(hosts))
    out = io.StringIO()
    started = time.perf_counter()
    with contextlib.redirect_stdout(out):
        code = main(["--config", str(path), "config", "show"])
    elapsed = time.perf_counter() - started
    assert code == 0 and out.getvalue().count("gpu-box-") >= 2 * hosts
    return elapsed


def run() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="500,2000")
    sizes = [int(s) for s in parser.parse_args().sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        seconds_for(20, Path(tmp))  # warm-up: imports and first-call costs out of the figures
        timings = {n: seconds_for(n, Path(tmp)) for n in sizes}
    for n, s in timings.items():
        print(f"config show, {n:>6} hosts: {s:7.2f} s  ({s / n * 1e3:.2f} ms/host)")
    small, large = min(sizes), max(sizes)
    ratio = (timings[large] / large) / (timings[small] / small)
    print(f"per-host time ratio {large} vs {small} hosts: {ratio:.2f} (1.0 = linear)")


if __name__ == "__main__":
    run()
