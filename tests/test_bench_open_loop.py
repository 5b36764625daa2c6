"""Open-loop steps through the native engine against the simulator over HTTP: arrivals on
schedule, the --max-concurrency cap, and a request-rate sweep's table, knee and diagnosis."""

from __future__ import annotations

import asyncio
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from console.bench.engines import NativeEngine
from console.bench.sweep import run_sweep
from console.bench.worker import Job, new_session, run_job
from console.bench.workload import Workload
from console.config_models import SweepPreset
from tests.support.sim_fixtures import SimFactory, SimProcess


def _max_in_flight(spans: list[tuple[int, int]]) -> int:
    events = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    level = peak = 0
    for _, step in events:
        level += step
        peak = max(peak, level)
    return peak


@pytest.mark.slow
def test_open_loop_keeps_the_schedule_and_the_cap(sim_factory: SimFactory) -> None:
    sim: SimProcess = sim_factory("--sim-speed", "20")

    async def go(arrivals: tuple[float, ...], cap: int) -> list[tuple[int, int]]:
        import time

        session = new_session(60)
        start = time.perf_counter_ns() + 50_000_000
        job = Job(base_url=sim.base_url, workload=Workload("generate", 32, 64), streams=cap,
                  prompts=len(arrivals), start_at_ns=start, deadline_ns=None, timeout_s=60,
                  seed=1, arrivals=arrivals)
        try:
            records = await run_job(job, session)
        finally:
            await session.close()
        assert all(r.ok for r in records) and len(records) == len(arrivals)
        return [(r.start_ns - start, r.end_ns - start) for r in records]

    # All at once, at most 3 in flight: bench_serving's semaphore.
    capped = asyncio.run(go((0.0,) * 12, 3))
    assert _max_in_flight(capped) == 3
    # Without a cap every request leaves at its own arrival time, never before it.
    arrivals = tuple(i * 0.05 for i in range(8))
    spans = asyncio.run(go(arrivals, 0))
    starts = sorted(s for s, _ in spans)
    assert all(s >= a * 1e9 for s, a in zip(starts, arrivals, strict=True))
    assert _max_in_flight(spans) >= 2  # 64 tokens outlast a 50 ms gap: they overlap


@pytest.mark.slow
def test_rate_sweep_cli_reads_the_rate_as_its_axis(sim_factory: SimFactory,
                                                    tmp_path: Path) -> None:
    sim: SimProcess = sim_factory("--sim-speed", "20")
    proc = subprocess.run(
        [sys.executable, "-m", "console.cli", "sweep", "--url", sim.base_url, "--json",
         "--request-rate", "4,inf", "--max-concurrency", "8", "--num-prompts", "16",
         "--input-len", "64", "--output-len", "16", "--db", str(tmp_path / "h.db")],
        capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert out["spec"]["request_rate"] == [4.0, "inf"]
    rates = [s["metrics"]["request_rate"] for s in out["steps"]]
    assert rates == [4.0, "inf"]
    assert all(s["concurrency"] == 8 for s in out["steps"])
    assert "req/s" in out["knee"]
    assert out["diagnosis"] is not None


@pytest.mark.slow
def test_rate_step_metrics_carry_rate_and_cap(sim_factory: SimFactory) -> None:
    sim: SimProcess = sim_factory("--sim-speed", "20")
    spec = SweepPreset(concurrency=[1], request_rate=[math.inf], max_concurrency=4,
                       num_prompts=8, input_len=32, output_len=8)
    outcome = asyncio.run(run_sweep(spec, sim.base_url, engine=NativeEngine(max_workers=1),
                                    snapshot_server_info=False))
    (step,) = outcome.steps
    assert step.status == "ok" and step.metrics is not None
    assert step.concurrency == 4 and step.metrics.completed == 8
    assert step.metrics.request_rate == math.inf and step.metrics.max_concurrency == 4
    assert step.metrics.steady is None  # an open loop holds no target concurrency


@pytest.mark.slow
def test_mooncake_trace_replays_its_timestamps_and_shares_its_blocks(
    sim_factory: SimFactory, tmp_path: Path
) -> None:
    sim: SimProcess = sim_factory("--sim-speed", "20")
    trace = tmp_path / "trace.jsonl"
    rows = [{"timestamp": 1000 + 200 * i, "input_length": 1100, "output_length": 4,
             "hash_ids": [7, 8, 100 + i]} for i in range(5)]
    trace.write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = SweepPreset(concurrency=[1], workload="trace", trace_file=str(trace),
                       max_concurrency=8)
    outcome = asyncio.run(run_sweep(spec, sim.base_url, engine=NativeEngine(max_workers=1),
                                    snapshot_server_info=False))
    (step,) = outcome.steps
    m = step.metrics
    assert step.status == "ok" and m is not None and m.completed == 5
    assert m.input_tokens == 5 * 1100
    # 0.8 s of trace: the requests follow the timestamps, so the step lasts about that long
    # (sent at once, 4-token requests at 20x speed end within ~0.2 s). The step is timed from
    # its first request's send, which a loaded machine can start late while the later sends
    # keep the trace's schedule: once 0.779 s. One inter-arrival (0.2 s) of slack for that.
    assert m.duration_s >= 0.6
    # Blocks 7 and 8 (2 x 512 tokens) are shared: each later request finds them cached.
    assert m.cached_tokens >= 4 * 1024
