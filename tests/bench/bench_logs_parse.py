"""Benchmark: parse+classify lines/s on one core vs `grep -E` over the same 1M-line file, and
memory while following a log that grows by 5,000 lines/s.

Run: .venv/bin/python tests/bench/bench_logs_parse.py [--lines 1000000] [--follow-seconds 10]
Prints figures and ratios; nothing is asserted here (the bound is checked in the tests).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import random
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import contextlib

from console.host.local import LocalTransport
from console.logs.assembler import EventAssembler
from console.logs.batch_stats import batch_stats
from console.logs.follower import LogFollower
from console.logs.server_stats import StatsAggregator
from console.logs.store import LogStore

GREP_PATTERN = (
    r"KV cache pool is full|out of memory|Out of memory|watchdog timeout|crashed with exit code"
    r"|hit an exception|Traceback|DeepGEMM|default MoE kernel config|NaN detected"
    r"|Health check failed|SIGTERM received|fired up"
)


def generate(path: Path, count: int) -> None:
    rng = random.Random(1)
    templates = [
        "[2026-02-19 05:{m:02d}:{s:02d} TP0] Decode batch, #running-req: {r}, #token: {t}, "
        "token usage: {u:.2f}, cuda graph: True, gen throughput (token/s): {g:.2f}, "
        "#queue-req: {q}",
        "[2026-02-19 05:{m:02d}:{s:02d} TP0] Prefill batch, #new-seq: 4, #new-token: 4096, "
        "#cached-token: 0, token usage: {u:.2f}, #running-req: {r}, #queue-req: {q}, "
        "#pending-token: 0, cuda graph: True, input throughput (token/s): {g:.2f}",
        '[2026-02-19 05:{m:02d}:{s:02d}] INFO:     127.0.0.1:{t} - "POST /v1/chat/completions '
        'HTTP/1.1" 200 OK',
        "[2026-02-19 05:{m:02d}:{s:02d} TP0] KV cache pool is full. Retract requests. "
        "#retracted_reqs: 3, #new_tokens_gained: {t}, #new_token_ratio: 0.4000 -> 0.7000",
        "[2026-02-19 05:{m:02d}:{s:02d}] Load weight begin. avail mem=138.52 GB",
    ]
    weights = [60, 15, 22, 1, 2]
    with path.open("w") as handle:
        for i in range(count):
            template = rng.choices(templates, weights)[0]
            handle.write(template.format(m=(i // 60) % 60, s=i % 60, r=rng.randint(1, 256),
                                         t=rng.randint(1, 900000), u=rng.random(),
                                         g=rng.random() * 6000, q=rng.randint(0, 30)) + "\n")


def bench_parse(path: Path) -> None:
    size = path.stat().st_size
    with path.open("rb") as handle:
        raw = [line.rstrip(b"\n").decode("utf-8", "replace") for line in handle]
    count = len(raw)

    t0 = time.perf_counter()
    grep = subprocess.run(["grep", "-E", "-c", GREP_PATTERN, str(path)], capture_output=True,
                          text=True, check=False)
    grep_s = time.perf_counter() - t0

    gc.collect()
    assembler = EventAssembler()
    t0 = time.perf_counter()
    events = 0
    for line in raw:
        if assembler.feed(line) is not None:
            events += 1
    parse_s = time.perf_counter() - t0

    assembler = EventAssembler()
    aggregator = StatsAggregator()
    t0 = time.perf_counter()
    for line in raw:
        event = assembler.feed(line)
        if event is not None and event.is_batch:
            stats = batch_stats(event)
            if stats is not None:
                aggregator.add(stats)
    full_s = time.perf_counter() - t0

    print(f"file: {count:,} lines, {size / 1e6:.1f} MB ({path})")
    print(f"grep -E (catalogue-like alternation, -c): {grep_s:.3f} s "
          f"= {count / grep_s:,.0f} lines/s  (matches: {grep.stdout.strip()})")
    print(f"parse+classify (one core, Python):        {parse_s:.3f} s "
          f"= {count / parse_s:,.0f} lines/s  ({events:,} events)")
    print(f"parse+classify+batch stats+aggregate:     {full_s:.3f} s "
          f"= {count / full_s:,.0f} lines/s")
    print(f"ratio grep/parse: {parse_s / grep_s:.1f}x slower than grep "
          f"(full pipeline {full_s / grep_s:.1f}x)")


async def bench_follow(seconds: float, rate: int, max_lines: int) -> None:
    """A writer appends `rate` lines/s; the follower parses them into a capped store."""
    directory = Path(tempfile.mkdtemp())
    log = directory / "server.log"
    log.write_text("")
    transport = LocalTransport("bench")
    await transport.connect()
    follower = LogFollower(transport, str(log), start_lines=0, batch_interval=0.15)
    store = LogStore(max_lines=max_lines)
    aggregator = StatsAggregator()
    written = 0
    received = 0
    stop = asyncio.Event()
    samples: list[tuple[float, int, int]] = []

    async def writer() -> None:
        nonlocal written
        tick = 0.05
        per_tick = int(rate * tick)
        start = time.perf_counter()
        with log.open("a") as handle:
            while time.perf_counter() - start < seconds:
                for _ in range(per_tick):
                    handle.write(f"[2026-02-19 05:25:03 TP0] Decode batch, #running-req: 64, "
                                 f"#token: {written}, token usage: 0.12, cuda graph: True, "
                                 f"gen throughput (token/s): 5321.47, #queue-req: 0\n")
                    written += 1
                handle.flush()
                await asyncio.sleep(tick)
        await asyncio.sleep(1.0)
        stop.set()

    async def reader() -> None:
        nonlocal received
        async for batch in follower:
            store.append(batch.events)
            aggregator.add_events(batch.events)
            received += sum(e.line_count for e in batch.events)
            current, _peak = tracemalloc.get_traced_memory()
            samples.append((time.perf_counter(), current, store.line_count))
            if stop.is_set() and received >= written:
                return

    tracemalloc.start()
    t0 = time.perf_counter()
    task = asyncio.create_task(reader())
    await writer()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(task, 10)
    elapsed = time.perf_counter() - t0
    _current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    await follower.close()
    await transport.close()
    half = [s[1] for s in samples[len(samples) // 2 :]] or [0]
    print(f"follow: wrote {written:,} lines in {seconds:.0f} s ({written / seconds:,.0f}/s), "
          f"received {received:,} in {elapsed:.1f} s; store cap {max_lines:,} lines")
    print(f"  store retained {store.line_count:,} lines, dropped {store.dropped_lines:,}; "
          f"{store.char_count / 1e6:.1f} MB of text")
    print(f"  traced Python memory: peak {peak / 1e6:.1f} MB; second half of run "
          f"min {min(half) / 1e6:.1f} / max {max(half) / 1e6:.1f} MB (flat = bounded)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--follow-seconds", type=float, default=10.0)
    parser.add_argument("--rate", type=int, default=5000)
    parser.add_argument("--max-lines", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.log"
        generate(path, args.lines)
        bench_parse(path)
    asyncio.run(bench_follow(args.follow_seconds, args.rate, args.max_lines))
    print(f"(pid {os.getpid()}, python {sys.version.split()[0]})")


if __name__ == "__main__":
    main()
