"""Benchmark: is the log UI responsive while it follows a log growing by 5,000 lines/s?

A headless Textual app with a LogView and a ServerStrip is fed the way the app feeds them: a
real LogFollower (LocalTransport, the host-side follower in a subprocess) on a file that a
separate writer process grows at --rate lines/s; every batch (~150 ms) goes to
`LogView.append_events` and `StatsAggregator.add_events`, and the strip gets a snapshot at
2 Hz. Meanwhile we measure
  * event-loop lag: a 10 ms asyncio timer's lateness (p50/p99/max);
  * key latency: `pilot.press("up")` / `pilot.press("end")` every 250 ms, time until the
    LogView's action handler ran;
  * process CPU (the console process: parsing, widgets, rendering).
The same app idle (no follower, no writer) is measured the same way; ratios compare the two.

Run: .venv/bin/python tests/bench/bench_logs_ui.py [--seconds 10] [--rate 5000]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from textual.app import App, ComposeResult

from console.host.local import LocalTransport
from console.logs.follower import LogFollower
from console.logs.server_stats import StatsAggregator
from widgets.log_view import LogView
from widgets.server_strip import ServerStrip

WRITER = r"""
import random, sys, time
path, rate, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
rng = random.Random(1)
lines = [
    "[2026-02-19 05:25:03 TP0] Decode batch, #running-req: {r}, #token: {n}, token usage: "
    "0.{u:02d}, cuda graph: True, gen throughput (token/s): {g}.47, #queue-req: {q}",
    "[2026-02-19 05:25:03 TP0] Prefill batch, #new-seq: 4, #new-token: 4096, #cached-token: 0, "
    "token usage: 0.{u:02d}, #running-req: {r}, #queue-req: {q}, #pending-token: 0, cuda graph: "
    "True, input throughput (token/s): {g}.71",
    '[2026-02-19 05:25:03] INFO:     127.0.0.1:{n} - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    "[2026-02-19 05:25:03 TP0] KV cache pool is full. Retract requests. #retracted_reqs: 3",
]
weights = [60, 15, 24, 1]
written = 0
start = time.monotonic()
with open(path, "a") as handle:
    while (now := time.monotonic()) - start < seconds:
        target = int((now - start) * rate)
        out = []
        for n in range(written, target):
            template = rng.choices(lines, weights)[0]
            out.append(template.format(n=n, r=rng.randint(1, 256), u=rng.randint(0, 99),
                                       g=rng.randint(100, 6000), q=rng.randint(0, 30)) + "\n")
        handle.write("".join(out))
        handle.flush()
        written = target
        time.sleep(0.02)
print(written)
"""


class TimedLogView(LogView):
    """LogView that records when its key actions ran (the handler is the end of a key press)."""

    handled: list[float]

    def on_mount(self) -> None:
        super().on_mount()
        self.handled = []

    def action_cursor(self, delta: int) -> None:
        self.handled.append(time.perf_counter())
        super().action_cursor(delta)

    def action_follow_end(self) -> None:
        self.handled.append(time.perf_counter())
        super().action_follow_end()


class BenchApp(App[None]):
    CSS = "Screen { layout: vertical; } ServerStrip { height: 5; }"

    def compose(self) -> ComposeResult:
        yield ServerStrip(id="strip")
        yield TimedLogView(id="log", max_lines=50_000)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1)))] if ordered else 0.0


async def run(seconds: float, rate: int, *, follow: bool) -> dict[str, float]:
    app = BenchApp()
    lags: list[float] = []
    keys: list[float] = []
    gc_pauses: list[float] = []  # full (generation 2) collections, seconds
    gc_started = 0.0

    def on_gc(phase: str, info: dict[str, int]) -> None:
        nonlocal gc_started
        if info["generation"] != 2:
            return
        if phase == "start":
            gc_started = time.perf_counter()
        else:
            gc_pauses.append(time.perf_counter() - gc_started)

    delivered = 0
    batches = 0
    written = 0
    async with app.run_test(headless=True, size=(140, 45)) as pilot:
        view = app.query_one(TimedLogView)
        strip = app.query_one(ServerStrip)
        view.lines.focus()
        await pilot.pause()
        stop = asyncio.Event()

        async def lag_probe() -> None:
            while not stop.is_set():
                t0 = time.perf_counter()
                await asyncio.sleep(0.01)
                lags.append(time.perf_counter() - t0 - 0.01)

        async def feed(follower: LogFollower) -> None:
            nonlocal delivered, batches
            aggregator = StatsAggregator()
            last_strip = 0.0
            async for batch in follower:
                view.append_events(batch.events)  # what the app does with each batch
                aggregator.add_events(batch.events)
                delivered += sum(len(e.lines) for e in batch.events)
                batches += 1
                now = time.perf_counter()
                if now - last_strip >= 0.5:
                    strip.update_stats(aggregator.snapshot())
                    last_strip = now

        tasks = [asyncio.create_task(lag_probe())]
        writer = None
        follower = transport = None
        tmp = tempfile.TemporaryDirectory()
        if follow:
            log = Path(tmp.name) / "server.log"
            log.write_text("")
            transport = LocalTransport("bench")
            await transport.connect()
            follower = LogFollower(transport, str(log), start_lines=0, batch_interval=0.15)
            tasks.append(asyncio.create_task(feed(follower)))
            await asyncio.sleep(0.5)  # the host follower is up and tailing
            writer = subprocess.Popen([sys.executable, "-c", WRITER, str(log), str(rate),
                                       str(seconds)], stdout=subprocess.PIPE, text=True)
        lags.clear()
        gc.callbacks.append(on_gc)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        deadline = wall0 + seconds
        n = 0
        while time.perf_counter() < deadline:
            key = "up" if n % 2 == 0 else "end"
            before = len(view.handled)
            t0 = time.perf_counter()
            await pilot.press(key)
            if len(view.handled) > before:
                keys.append(view.handled[before] - t0)
            n += 1
            await asyncio.sleep(0.25)
        cpu = time.process_time() - cpu0
        wall = time.perf_counter() - wall0
        stop.set()
        gc.callbacks.remove(on_gc)
        if writer is not None:
            written = int(writer.communicate(timeout=30)[0].strip() or 0)
            with contextlib.suppress(TimeoutError):  # let the last lines arrive
                end = time.perf_counter() + 3
                while delivered < written and time.perf_counter() < end:
                    await asyncio.sleep(0.05)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if follower is not None:
            await follower.close()
        if transport is not None:
            await transport.close()
        tmp.cleanup()
        store_lines = view.store.line_count
    return {
        "lag_p50": 1000 * statistics.median(lags), "lag_p99": 1000 * percentile(lags, 0.99),
        "lag_max": 1000 * max(lags), "key_p50": 1000 * statistics.median(keys),
        "key_p99": 1000 * percentile(keys, 0.99), "key_max": 1000 * max(keys),
        "keys": len(keys), "cpu_pct": 100 * cpu / wall, "written": written,
        "delivered": delivered, "batches": batches, "store_lines": store_lines,
        "gc_full": len(gc_pauses), "gc_max": 1000 * max(gc_pauses, default=0.0),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rate", type=int, default=5000)
    args = parser.parse_args()
    idle = asyncio.run(run(args.seconds, args.rate, follow=False))
    busy = asyncio.run(run(args.seconds, args.rate, follow=True))
    print(f"headless LogView + ServerStrip, 140x45, {args.seconds:g} s each; key presses every "
          f"250 ms (up / end); loop probe 10 ms")
    for name, r in (("idle", idle), (f"following {args.rate:,}/s", busy)):
        print(f"[{name:>16}] loop lag p50 {r['lag_p50']:.1f} ms, p99 {r['lag_p99']:.1f} ms, max "
              f"{r['lag_max']:.1f} ms | key->handler p50 {r['key_p50']:.1f} ms, p99 "
              f"{r['key_p99']:.1f} ms, max {r['key_max']:.1f} ms ({r['keys']:.0f} keys) | "
              f"CPU {r['cpu_pct']:.0f}% of one core | full GCs {r['gc_full']:.0f}, longest "
              f"{r['gc_max']:.1f} ms")
    print(f"follow: written {busy['written']:,.0f}, delivered {busy['delivered']:,.0f} in "
          f"{busy['batches']:.0f} batches; view holds {busy['store_lines']:,.0f} lines")

    def ratio(key: str) -> str:
        return f"{busy[key] / idle[key]:.1f}x" if idle[key] > 0 else "n/a"

    print(f"ratio following/idle: loop lag p99 {ratio('lag_p99')}, key p99 {ratio('key_p99')}, "
          f"CPU {ratio('cpu_pct')}")


if __name__ == "__main__":
    main()
