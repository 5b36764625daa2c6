"""The simulator in ideal-timing mode as the client benchmarks start it (tests/bench/): every
request gets TTFT exactly `ttft_ms`, then a token every `itl_ms`, no model and no noise, so a
client's error against the truth can be read off (console.sim.engine.IdealEngine)."""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def ideal_sim_args(port: int, ttft_ms: float, itl_ms: float, state_file: Path) -> list[str]:
    """`console.sim`'s arguments (after `-m console.sim`) for an ideal sim on PORT."""
    return ["--model-path", "test-model", "--port", str(port), "--sim-startup-seconds", "0",
            "--sim-seed", "5", "--sim-ideal-ttft-ms", str(ttft_ms),
            "--sim-ideal-itl-ms", str(itl_ms), "--max-running-requests", "4096",
            "--sim-state-file", str(state_file)]  # fmt: skip


def start_ideal_sim(port: int, ttft_ms: float, itl_ms: float, state_file: Path, *,
                    program: Sequence[str] = (), cwd: Path = ROOT,
                    extra_args: Sequence[str] = ()) -> subprocess.Popen[bytes]:
    """Start it (PROGRAM: what runs the sim, default `python -m console.sim`; a prefix such
    as `taskset -c 0` goes in front of it; EXTRA_ARGS after the usual ones, e.g.
    `--sim-ideal-procs 4`) and return once it answers /ready."""
    argv = [*(program or (sys.executable, "-m", "console.sim")),
            *ideal_sim_args(port, ttft_ms, itl_ms, state_file), *extra_args]
    process = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    wait_ready(f"http://127.0.0.1:{port}", process)
    return process


def wait_ready(url: str, process: subprocess.Popen[bytes] | None = None) -> None:
    for _ in range(600):
        if process is not None and process.poll() is not None:
            raise SystemExit(f"sim for {url} exited with {process.returncode} before /ready")
        try:
            urllib.request.urlopen(url + "/ready", timeout=1)
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"sim at {url} never became ready")


def add_ideal_load_args(parser: argparse.ArgumentParser, concurrency: list[int]) -> None:
    """The options every ideal-sim client benchmark shares: the load and the sim's timing."""
    parser.add_argument("--concurrency", type=_ints, default=concurrency)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ttft-ms", type=float, default=100.0)
    parser.add_argument("--itl-ms", type=float, default=100.0)
    parser.add_argument("--input-len", type=int, default=64)
    parser.add_argument("--output-len", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2, help="prompts per step = C x rounds")


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]
