"""64 simulated hosts over the real sshd, the console on its fleet view (issue 31).

Each host: its own SSH connection to tests/support/sshd.py's sshd, its own simulated SGLang
server (8 simulated GPUs, metrics on) started before the console opens (tests/support/
sim_fleet.py). The console is the real app, headless at 120x40, on the fleet screen: the rows
on screen sample at ui.gpu_interval_s, the others at ui.offscreen_interval_s.

Measures, in this process (the console; the servers, agents and sshd are other processes):
- the time from the app's start until every row is filled (connected, a GPU sample, the
  server's state and SGLang version known);
- then over a steady window: the console's CPU share of one core (process CPU time / wall
  time) and its RSS (VmRSS now, VmHWM the peak).
Goal (issue 31): rows filled within 10 s, < 25% of a core, < 400 MB on a 2-core machine.
The fill is also told apart by who spent the machine's CPU meanwhile: here the 64 hosts' own
work (their logins' rc files, helpers, agents, followers, servers) shares the console's cores,
which on a real fleet it does not.

    .venv/bin/python tests/bench/bench_fleet_scale.py [--hosts 64] [--window 20]
        [--offscreen 5.0]   # 1.0: every host at the full rate (the peer without pacing)
        [--profile FILE]    # cProfile of the console over the steady window, for pstats
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")

from console import aio
from console.config import LoadedConfig
from console.config_models import PlateauConfig
from console.session.state import HostState
from tests.support.sim_fleet import fleet_config, start_servers, stop_servers
from tests.support.sshd import start_sshd


def filled(state: HostState) -> bool:
    return (state.connection == "connected" and state.gpu_sample is not None
            and state.server_state == "ready" and state.server_version is not None)


FILL_LIMIT_S = 180.0

def _connected(s: HostState) -> bool:
    return s.connection == "connected"


def _sampled(s: HostState) -> bool:
    return s.gpu_sample is not None


def _server_known(s: HostState) -> bool:
    return s.server_state != "unknown"


def _versioned(s: HostState) -> bool:
    return s.server_version is not None


_MILESTONES: dict[str, Callable[[HostState], bool]] = {
    "connected": _connected,
    "with a GPU sample": _sampled,
    "with a server state": _server_known,
    "with a version": _versioned,
}


def _missing(sessions: list[Any]) -> str:
    """What the unfilled rows lack, counted (connection states with their reasons)."""
    lacking: Counter[str] = Counter()
    for session in sessions:
        state = session.state
        if state.connection != "connected":
            lacking[f"{state.connection} {state.connection_detail[:60]}"] += 1
        elif state.gpu_sample is None:
            lacking["no GPU sample"] += 1
        elif not filled(state):
            lacking[f"server {state.server_state} {state.server_detail[:40]}"] += 1
    return "; ".join(f"{n} x {what}" for what, n in lacking.most_common())


async def _close(sessions: list[Any]) -> None:
    """Close every session, 30 s at most in all (a teardown that hung under load once)."""
    with contextlib.suppress(TimeoutError):
        await aio.wait_for(asyncio.gather(*(s.close() for s in sessions),
                                          return_exceptions=True), 30)


def busy_cpu_s() -> float:
    """CPU seconds this machine has spent busy (all processes: the console, sshd, the hosts'
    logins, helpers, agents, followers and servers), from /proc/stat."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")  # less idle, iowait


def memory_mb() -> tuple[float, float]:
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024
    return fields["VmRSS"], fields["VmHWM"]


async def run_console(config: PlateauConfig, store: Path, window: float,
                      profile: str | None = None) -> dict[str, float]:
    from console.app.app import PlateauApp
    from console.session.service import HostSession

    sessions = [HostSession(host, config, store_path=store) for host in config.hosts]
    app = PlateauApp(LoadedConfig(config, None), sessions, start_screen="fleet")
    out: dict[str, float] = {}
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            started = time.monotonic()
            console0, busy0 = time.process_time(), busy_cpu_s()
            firsts: dict[str, float] = {}
            said = 0.0
            while not all(filled(s.state) for s in sessions):
                if time.monotonic() - started > said + 10:
                    said += 10
                    print(f"  after {said:.0f} s: {_missing(sessions)}", flush=True)
                for what, test in _MILESTONES.items():
                    if what not in firsts and all(test(s.state) for s in sessions):
                        firsts[what] = time.monotonic() - started
                        print(f"  all hosts {what} after {firsts[what]:.1f} s")
                if time.monotonic() - started > FILL_LIMIT_S:
                    break
                await pilot.pause(0.05)
            out["fill_s"] = time.monotonic() - started
            out["fill_console_cpu_s"] = time.process_time() - console0
            out["fill_busy_cpu_s"] = busy_cpu_s() - busy0
            out["filled"] = float(sum(filled(s.state) for s in sessions))
            await pilot.pause(2.0)  # the agents' first seconds
            profiler = cProfile.Profile() if profile else None
            if profiler is not None:
                profiler.enable()
            cpu0, wall0 = time.process_time(), time.monotonic()
            await pilot.pause(window)
            out["cpu_share"] = (time.process_time() - cpu0) / (time.monotonic() - wall0)
            if profiler is not None and profile is not None:
                profiler.disable()
                profiler.dump_stats(profile)
            out["rss_mb"], out["peak_rss_mb"] = memory_mb()
            out["on_screen"] = float(len(app.on_screen_hosts))
            print(f"  measured: {out}", flush=True)
            await _close(sessions)  # before the app exits: its pumps read their events
    finally:
        await _close(sessions)
    return out


async def main(hosts: int, window: float, offscreen: float, profile: str | None) -> None:
    root = Path(tempfile.mkdtemp(prefix="plateau-fleet-bench-"))
    sshd = start_sshd(root / "sshd", max_startups=hosts + 16)
    config = fleet_config(root / "hosts", sshd, hosts, offscreen_interval_s=offscreen)
    try:
        began = time.monotonic()
        await start_servers(config, root / "flag-cache")
        print(f"{hosts} simulated servers ready in {time.monotonic() - began:.1f} s (setup)")
        result = await run_console(config, root / "runs.db", window, profile)
    finally:
        stop_servers(config)
        sshd.stop()
    print(f"hosts {hosts}, {result['on_screen']:.0f} rows on screen at 120x40, off-screen "
          f"interval {offscreen} s, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    if result["filled"] == hosts:
        print(f"every row filled after {result['fill_s']:.1f} s (goal < 10 s)")
    else:
        print(f"{result['filled']:.0f} of {hosts} rows filled after {result['fill_s']:.0f} s")
    others = result["fill_busy_cpu_s"] - result["fill_console_cpu_s"]
    print(f"  while filling, the machine was busy {result['fill_busy_cpu_s']:.1f} CPU-s: the "
          f"console {result['fill_console_cpu_s']:.1f}, everything else (sshd, the hosts' "
          f"logins, helpers, agents, followers, servers) {others:.1f}, i.e. "
          f"{others / (os.cpu_count() or 1):.1f} s of this machine's {os.cpu_count()} cores")
    print(f"console CPU over {window:.0f} s: {100 * result['cpu_share']:.1f}% of a core "
          f"(goal < 25%)")
    print(f"console RSS {result['rss_mb']:.0f} MB, peak {result['peak_rss_mb']:.0f} MB "
          f"(goal < 400 MB)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=64)
    parser.add_argument("--window", type=float, default=20.0)
    parser.add_argument("--offscreen", type=float, default=5.0)
    parser.add_argument("--profile", metavar="FILE", help="cProfile the console into FILE")
    args = parser.parse_args()
    asyncio.run(main(args.hosts, args.window, args.offscreen, args.profile))
