"""CPU of the console while showing 8 GPUs at 1 Hz and a log growing at 1,000 lines/s.

Headless, real app, ReplaySession fed live by a producer task (same events a HostSession
emits: GpuUpdate each second, a LogBatch every 150 ms, stats twice a second). Measures this
process's CPU time over the window; the peer is the same app idle (no feed) in the same run.

    .venv/bin/python tests/bench/bench_app_cpu.py [--seconds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from textual.pilot import Pilot

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")

from console.logs.models import LogEvent, Severity
from console.logs.server_stats import StatsAggregator
from console.session.events import GpuUpdate, LogBatch, ServerStats
from tests.support.app_fixtures import gpu_sample, make_app

LINES_PER_S = 1_000
FLUSH_S = 0.15


async def measure(seconds: float, feed: bool) -> tuple[float, int]:
    app = make_app()
    app.tick_seconds = 1.0
    lines_sent = 0
    result: dict[str, float] = {}

    async def producer() -> None:
        nonlocal lines_sent
        session = app.active_session
        aggregator = StatsAggregator()
        seq = 10_000
        next_gpu = time.monotonic()
        next_stats = time.monotonic()
        gpu_seq = 0
        while True:
            now = time.monotonic()
            count = int(LINES_PER_S * FLUSH_S)
            events = []
            for _ in range(count):
                text = (f"[2026-03-14 12:41:{seq % 60:02d} TP0] Decode batch, #running-req: 64, "
                        f"#token: {seq}, token usage: 0.12, cuda graph: True, "
                        f"gen throughput (token/s): {5000 + seq % 400}.00, #queue-req: 0")
                events.append(LogEvent(seq, "sglang", (text,), text[26:], Severity.DEBUG))
                seq += 1
            session.feed(LogBatch("demo", tuple(events)))
            aggregator.add_events(events[-5:])
            lines_sent += count
            if now >= next_stats:
                session.feed(ServerStats("demo", aggregator.snapshot()))
                next_stats += 0.5
            if now >= next_gpu:
                gpu_seq += 1
                session.feed(GpuUpdate("demo", gpu_sample(8, gpu_seq)))
                next_gpu += 1.0
            await asyncio.sleep(FLUSH_S)

    async def pilot_body(pilot: Pilot[Any]) -> None:
        await pilot.pause(0.5)
        task = asyncio.create_task(producer()) if feed else None
        await asyncio.sleep(1.0)  # warm up
        cpu0, wall0 = time.process_time(), time.monotonic()
        await asyncio.sleep(seconds)
        result["cpu"] = time.process_time() - cpu0
        result["wall"] = time.monotonic() - wall0
        if task is not None:
            task.cancel()
        app.exit()

    await app.run_async(headless=True, size=(160, 48), auto_pilot=pilot_body)
    return result["cpu"] / result["wall"] * 100, lines_sent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    idle, _ = asyncio.run(measure(args.seconds, feed=False))
    busy, lines = asyncio.run(measure(args.seconds, feed=True))
    print(f"window {args.seconds:.0f}s, 160x48, 8 GPUs @1 Hz, log {LINES_PER_S} lines/s "
          f"({lines} lines sent)")
    print(f"idle app (peer):        {idle:5.1f}% of one core")
    print(f"8 GPUs + 1000 lines/s:  {busy:5.1f}% of one core   (+{busy - idle:.1f} points over "
          "idle; includes building the synthetic events)")


if __name__ == "__main__":
    main()
