"""Agent CPU per sample for 8 simulated GPUs, against peers measured in the same run:
an empty Python loop iteration (the floor) and spawning a tiny subprocess (what an
nvidia-smi-per-tick agent pays at minimum, before nvidia-smi does any work).

    .venv/bin/python tests/bench/bench_gpu_agent.py [--samples 400]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import redirect_stdout
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from console.gpu import agent


def cpu_per_call(fn: Callable[[], object], n: int) -> float:
    t0 = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - t0) / n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=400)
    ns = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "gpu-state.json"
        state.write_text(json.dumps({
            "version": 1, "pid": os.getpid(), "updated": time.time() + 3600, "phase": "ready",
            "gpu_name": agent.SIM_DEFAULT_NAME, "num_gpus": 8, "memory_total_mib": 97887,
            "gpus": [{"index": i, "in_use": True, "memory_used_mib": 80000.0,
                      "activity": random.random(), "tensor_activity": 0.5,
                      "pcie_tx_bytes_per_s": 1e9, "pcie_rx_bytes_per_s": 1e9}
                     for i in range(8)],
            "tokens_per_s": 1.0, "running": 1, "queued": 0}))
        args = agent.parse_args(["--backend", "sim", "--sim-state", str(state)])
        backend = agent.SimBackend(args)
        backend.open()
        sink = io.StringIO()

        def one_sample() -> None:  # what the agent's loop does per tick, minus the sleep
            gpus, extra = backend.sample()
            with redirect_stdout(sink):
                agent.emit({"type": "sample", "seq": 1, "t": time.time(), "cost_ms": 0.1,
                            "gpus": gpus, **extra})
            sink.seek(0)
            sink.truncate()

        sample_cpu = cpu_per_call(one_sample, ns.samples)
        loop_cpu = cpu_per_call(lambda: None, 100_000)
        before = os.times()
        spawn_parent = cpu_per_call(lambda: subprocess.run(["true"], check=False), 50)
        after = os.times()
        spawn_child = (after.children_user + after.children_system
                       - before.children_user - before.children_system) / 50
        spawn_cpu = spawn_parent + spawn_child
    print(f"agent sim backend, 8 GPUs: {sample_cpu * 1e3:.3f} ms CPU per sample "
          f"({sample_cpu * 100:.3f}% of one core at 1 Hz)")
    print(f"empty python loop iteration: {loop_cpu * 1e6:.3f} µs "
          f"(sample = {sample_cpu / loop_cpu:,.0f}x an empty iteration)")
    print(f"spawning `true` (parent + child CPU): {spawn_cpu * 1e3:.3f} ms "
          f"(one agent sample = {sample_cpu / spawn_cpu:.2f}x one bare spawn)")

if __name__ == "__main__":
    main()
