"""Time from `plateau demo` start to the first frame, and on to live data and a ready server.

Runs `python -m console.cli demo`-equivalent in a fresh subprocess (imports included), headless:
t0 is the interpreter start; "first frame" is when the app's auto-pilot gets control (the
screen is composed, mounted and painted once). The peer, in the same run, is a bare Textual
App with one Static, started the same way.

    .venv/bin/python tests/bench/bench_app_startup.py [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

DEMO = r"""
import time; t0 = time.perf_counter()
import asyncio, json, os
os.environ["TEXTUAL_ANIMATIONS"] = "none"
from console.app.launch import Launch, _make_app, build_sessions, _shutdown
from console.config import LoadedConfig
from console.jobs.target import demo_profile, temp_demo
marks = {}
async def main():
    config, run_dir = temp_demo(1, startup_seconds=2.0)
    loaded = LoadedConfig(config, None)
    launch = Launch(loaded, launch_profile=demo_profile(loaded.config), stop_on_exit=True,
                    store_path=run_dir / "h.sqlite")
    sessions, active = build_sessions(launch)
    app = _make_app(launch, sessions, active)
    async def pilot(p):
        marks["first_frame"] = time.perf_counter() - t0
        state = app.active_state
        while state.gpu_sample is None:
            await asyncio.sleep(0.02)
        marks["gpu_data"] = time.perf_counter() - t0
        while state.server_state != "ready":
            await asyncio.sleep(0.02)
        marks["server_ready"] = time.perf_counter() - t0
        app.exit()
    try:
        await app.run_async(headless=True, size=(160, 48), auto_pilot=pilot)
    finally:
        await _shutdown(sessions, active, True)
asyncio.run(main())
print(json.dumps(marks))
"""

PEER = r"""
import time; t0 = time.perf_counter()
import asyncio, json
from textual.app import App
from textual.widgets import Static
class Bare(App):
    def compose(self):
        yield Static("hello")
marks = {}
async def pilot(p):
    marks["first_frame"] = time.perf_counter() - t0
    p.app.exit()
asyncio.run(Bare().run_async(headless=True, size=(160, 48), auto_pilot=pilot))
print(json.dumps(marks))
"""


def run(code: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    demo = [run(DEMO) for _ in range(args.runs)]
    peer = [run(PEER) for _ in range(args.runs)]

    def med(rows: list[dict[str, float]], key: str) -> float:
        return statistics.median(r[key] for r in rows)

    first, bare = med(demo, "first_frame"), med(peer, "first_frame")
    print(f"runs: {args.runs} (median), headless 160x48")
    print(f"plateau demo -> first frame:   {first * 1000:7.0f} ms")
    print(f"bare Textual app (peer):       {bare * 1000:7.0f} ms   (demo x{first / bare:.2f})")
    print(f"plateau demo -> GPU data:      {med(demo, 'gpu_data') * 1000:7.0f} ms")
    print(f"plateau demo -> server ready:  {med(demo, 'server_ready') * 1000:7.0f} ms "
          "(simulated startup 2 s)")


if __name__ == "__main__":
    main()
