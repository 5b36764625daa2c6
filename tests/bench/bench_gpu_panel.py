"""UI CPU of GpuPanel fed 8 GPUs at 1 Hz in a headless App, against the same App idle
(no panel updates) in the same run.

    .venv/bin/python tests/bench/bench_gpu_panel.py [--seconds 10] [--rate 1]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from textual.app import App, ComposeResult

from tests.support.gpu_fixtures import plateau_dark_theme, sim_series
from widgets.gpu_panel import GpuPanel


class BenchApp(App[None]):
    def __init__(self, compact: bool) -> None:
        super().__init__()
        self.register_theme(plateau_dark_theme())
        self.theme = "plateau-dark"
        self.panel = GpuPanel(compact=compact)

    def compose(self) -> ComposeResult:
        yield self.panel


async def measure(seconds: float, rate: float, feed: bool, compact: bool) -> float:
    header, samples = sim_series(8, 120)
    app = BenchApp(compact)
    async with app.run_test(size=(200, 60)) as pilot:
        app.panel.update_header(header)
        app.panel.update_sample(samples[0])
        await pilot.pause()
        t0 = time.process_time()
        end = time.monotonic() + seconds
        k = 0
        while time.monotonic() < end:
            if feed:
                app.panel.update_sample(samples[k % len(samples)])
                k += 1
            await asyncio.sleep(1.0 / rate)
        await pilot.pause()
        return (time.process_time() - t0) / seconds


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rate", type=float, default=1.0)
    ns = ap.parse_args()
    idle = await measure(ns.seconds, ns.rate, feed=False, compact=True)
    compact = await measure(ns.seconds, ns.rate, feed=True, compact=True)
    full = await measure(ns.seconds, ns.rate, feed=True, compact=False)
    print(f"headless App 200x60, 8 GPUs at {ns.rate:g} Hz, {ns.seconds:g} s each:")
    print(f"  idle app (no updates): {idle * 100:.2f}% of a core")
    for label, value in (("compact panel", compact), ("full panel", full)):
        per_update = (value - idle) * 1e3 / ns.rate
        print(f"  {label + ':':<22} {value * 100:.2f}% of a core "
              f"(+{per_update:.2f} ms CPU per update, {value / max(idle, 1e-9):.1f}x idle)")

if __name__ == "__main__":
    asyncio.run(main())
