"""Fixtures for the console app: hermetic config, a fixed clock and demo-like session data.

Snapshot tests feed fixed typed events through a ReplaySession: no timers, no network, no
subprocess; the uptime is computed against a frozen clock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from console import aio
from console.config import LoadedConfig
from console.config_models import HostConfig, PlateauConfig, UiConfig
from console.demo import demo_profiles
from console.logs.models import LogEvent, Severity
from console.session.events import (
    ConnectionChanged,
    GpuUpdate,
    LogBatch,
    Problem,
    ServerUpdate,
    SessionEvent,
    StatsUpdate,
    SweepPointDone,
    SweepProgress,
    TopologyUpdate,
)
from console.session.replay import ReplaySession

FIXED_NOW = datetime(2026, 3, 14, 12, 41, 12, tzinfo=UTC)
SERVER_SINCE = FIXED_NOW - timedelta(hours=0, minutes=41, seconds=12)


def fixed_clock() -> datetime:
    return FIXED_NOW


DATA = Path(__file__).resolve().parent.parent / "data"


def gpu_header() -> Any:
    """A simulated 8-GPU header recorded from the agent (host details scrubbed)."""
    from console.gpu.collector import parse_line

    return parse_line((DATA / "app_gpu_header.json").read_text(encoding="utf-8"))


def gpu_sample(count: int = 8, seq: int = 1) -> Any:
    from console.gpu.models import GpuReading, GpuSample

    utils = [87, 91, 64, 12, 45, 99, 78, None]
    readings = [
        GpuReading(
            index=i,
            name="NVIDIA RTX PRO 6000 Blackwell Server Edition",
            util_gpu=utils[i % len(utils)],
            util_mem=40 + i,
            mem_used_mib=72_900 + i * 211,
            mem_total_mib=97_887,
            power_w=None if i == 7 else 410 + i * 13,
            power_limit_w=600,
            temp_c=61 + i,
            sm_clock_mhz=2_400 - i * 10,
            sm_clock_max_mhz=2_617,
            mem_clock_mhz=14_001,
            mem_clock_max_mhz=14_001,
            clock_reasons=["sw power cap"] if i == 5 else [],
            pcie_gen=5,
            pcie_gen_max=5,
            pcie_width=16,
            pcie_width_max=16,
            pcie_tx_bytes_s=1.5e9 + i * 1e8,
            pcie_rx_bytes_s=2.0e9,
        )
        for i in range(count)
    ]
    # GpuSample validates its GPUs from dicts (it drops malformed entries), as the agent sends.
    return GpuSample.model_validate(
        {"seq": seq, "t": FIXED_NOW.timestamp(), "cost_ms": 0.4,
         "gpus": [r.model_dump() for r in readings]}
    )


_LOG_LINES: list[tuple[Severity, str]] = [
    (Severity.NOTABLE, "[2026-03-14 12:00:01] server_args=ServerArgs(model_path='demo/Example')"),
    (Severity.INFO, "[2026-03-14 12:00:03 TP0] Load weight begin. avail mem=94.51 GB"),
    (Severity.INFO, "[2026-03-14 12:00:09 TP0] Load weight end. type=DemoMoE, mem usage=41.2 GB"),
    (Severity.WARNING, "[2026-03-14 12:00:10 TP0] Using default MoE kernel config. Performance "
     "might be sub-optimal!"),
    (Severity.NOTABLE, "[2026-03-14 12:00:20] The server is fired up and ready to roll!"),
    (Severity.DEBUG, "[2026-03-14 12:40:58 TP0] Decode batch, #running-req: 64, #token: 81234, "
     "token usage: 0.12, cuda graph: True, gen throughput (token/s): 5321.40, #queue-req: 0"),
    (Severity.ERROR, "[2026-03-14 12:41:00 TP0] hostile [bold]markup[/ and \u2400 escape"),
]


def log_events() -> tuple[LogEvent, ...]:
    return tuple(
        LogEvent(i, "sglang", (text,), text, severity, source="/run/current.log")
        for i, (severity, text) in enumerate(_LOG_LINES)
    )


@dataclass(frozen=True)
class _Metrics:
    total_tok_s: float
    output_tok_s: float


@dataclass(frozen=True)
class _Step:
    index: int
    concurrency: int
    status: str
    metrics: _Metrics | None


def sweep_points() -> list[Any]:
    """console.bench StepResult objects when available, else a look-alike."""
    totals = {1: 95.0, 2: 183.0, 4: 350.0, 8: 640.0, 16: 1_120.0, 32: 1_780.0, 64: 2_410.0}
    try:
        from console.bench.models import StepMetrics, StepResult

        return [
            StepResult(
                index=i, concurrency=c, status="ok",
                metrics=StepMetrics(concurrency=c, total_tok_s=t, output_tok_s=t / 3),
            )
            for i, (c, t) in enumerate(totals.items())
        ]
    except Exception:
        return [
            _Step(i, c, "ok", _Metrics(t, t / 3)) for i, (c, t) in enumerate(totals.items())
        ]


def server_stats() -> Any:
    """The strip's rolling stats, aggregated from real batch lines by console.logs."""
    from console.logs.batch_stats import BatchStats
    from console.logs.server_stats import StatsAggregator

    aggregator = StatsAggregator()
    for i, gen in enumerate([1200.0, 2800.0, 4100.0, 4900.0, 5200.0, 5321.4]):
        aggregator.add(
            BatchStats(
                kind="decode", running_reqs=16 * (i + 1), queue_reqs=max(0, 3 - i),
                token_usage=0.02 * (i + 1), cuda_graph=True, gen_throughput=gen,
                timestamp=f"2026-03-14 12:40:5{i}",
            )
        )
    return aggregator.snapshot()


def demo_events(host: str = "demo", *, sweep_running: bool = False,
                points: list[Any] | None = None) -> list[SessionEvent]:
    events: list[SessionEvent] = [
        ConnectionChanged(host, "connected"),
        ServerUpdate(host, "ready", version="0.5.23", profile="cutlass-moe", since=SERVER_SINCE),
        TopologyUpdate(host, gpu_header()),
        GpuUpdate(host, gpu_sample(), FIXED_NOW),
        LogBatch(host, log_events()),
        Problem(host, "log", "parse error in line 812: unexpected token", "warning", FIXED_NOW),
    ]
    events.append(StatsUpdate(host, server_stats()))
    run = "run-7"
    points = sweep_points() if points is None else points
    for point in points:
        events.append(SweepPointDone(host, run, point))
    if sweep_running:
        events.append(SweepProgress(host, run, len(points) + 1, 8, 128, "measure"))
    else:
        from console.session.events import SweepDone

        events.append(SweepDone(host, run, True, "7 steps"))
    return events


def ab_events(host: str = "demo") -> list[SessionEvent]:
    """A finished A/B (triton-moe vs cutlass-moe) as a session would report it."""
    from console.bench.compare import compare_runs
    from console.bench.verdict import judge
    from console.jobs.ab import ABResult
    from console.server.records import LaunchRecord
    from console.session.events import ABUpdate, SweepDone

    steps_b = sweep_points()
    steps_a = [
        p.model_copy(update={"metrics": p.metrics.model_copy(update={
            "total_tok_s": p.metrics.total_tok_s * (0.97 if p.concurrency < 16 else 0.9),
        })})
        for p in steps_b
    ]
    comparison = compare_runs(steps_a, steps_b, label_a="triton-moe", label_b="cutlass-moe")
    record = LaunchRecord(pid=1, pgid=1, port=30000, profile="x", argv=[], started_at=FIXED_NOW)
    verdict = judge(steps_a, steps_b, label_a="triton-moe", label_b="cutlass-moe")
    result = ABResult("triton-moe", "cutlass-moe", record, record, tuple(steps_a),
                      tuple(steps_b), comparison, verdict,
                      flags=(("moe-runner-backend", "triton", "cutlass"),))
    events: list[SessionEvent] = [ABUpdate(host, "validate", "triton-moe", "cutlass-moe",
                                           "quick", "checking both profiles")]
    for run, stage, steps in (("8", "sweep-a", steps_a), ("9", "sweep-b", steps_b)):
        events.append(ABUpdate(host, stage, "triton-moe", "cutlass-moe", "quick"))
        events.append(SweepProgress(host, run, 0, len(steps)))
        events += [SweepPointDone(host, run, step) for step in steps]
        events.append(SweepDone(host, run, True, "finished"))
    events.append(ABUpdate(host, "done", "triton-moe", "cutlass-moe", "quick", result.note,
                           result))
    return events


def app_config(hosts: list[str] | None = None, **ui: Any) -> LoadedConfig:
    names = hosts or ["demo"]
    # A fixed launch command: sys.executable differs between checkouts and would leak into
    # the config screen's snapshot.
    profiles = {
        name: profile.model_copy(update={"launch": ["python3", "-m", "console.sim"]})
        for name, profile in demo_profiles(30000, Path("/nonexistent/gpu-state.json")).items()
    }
    config = PlateauConfig(
        default_host=names[0],
        hosts=[
            HostConfig(name=n, local=True, run_dir=f"/tmp/plateau-test/{n}", profile="cutlass-moe")
            for n in names
        ],
        profiles=profiles,
        ui=UiConfig(**ui),
    )
    return LoadedConfig(config, None)


def make_app(
    *,
    hosts: list[str] | None = None,
    sweep_running: bool = False,
    screen: str = "dashboard",
    theme: str | None = None,
    keymap: dict[str, str] | None = None,
    with_ab: bool = False,
    points: list[Any] | None = None,
    **ui: Any,
) -> Any:
    from console.app.app import PlateauApp

    loaded = app_config(hosts, **ui)
    if keymap:
        loaded = LoadedConfig(loaded.config.model_copy(update={"keymap": keymap}), None)
    sessions = [
        ReplaySession.from_events(
            host,
            demo_events(host.name, sweep_running=sweep_running, points=points)
            + (ab_events(host.name) if with_ab else []),
            clock=fixed_clock,
        )
        for host in loaded.config.hosts
    ]
    return PlateauApp(
        loaded, sessions, clock=fixed_clock, start_screen=screen, theme=theme, tick_seconds=None
    )


@pytest.fixture
def app_factory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """Builds hermetic apps: no config discovery, no animations, fixed clock and data."""
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")
    monkeypatch.setenv("PLATEAU_CONFIG", str(tmp_path / "absent.toml"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    yield make_app


# -- live consoles: real HostSessions on the simulator (local or real sshd) ------------------

TINY_SWEEP = {
    "concurrency": [1, 2], "input_len": 16, "output_len": 8, "prompts_per_concurrency": 1,
    "flush_cache": False,
}


def sim_profiles(root: Path, port: int) -> dict[str, Any]:
    """Two simulator profiles differing only in the MoE runner (instant startup, metrics)."""
    import sys

    from console.config_models import ServerProfile

    common: dict[str, Any] = {
        "tp-size": 2, "enable-metrics": True, "sim-startup-seconds": 0,
        "sim-state-file": str(root / "gpu-state.json"), "sim-num-gpus": 2,
    }
    return {
        name: ServerProfile(
            launch=[sys.executable, "-m", "console.sim"], model_path="test/Example-MoE",
            port=port, flags={**common, "moe-runner-backend": backend},
        )
        for name, backend in (("cutlass-moe", "cutlass"), ("triton-moe", "triton"))
    }


@dataclass
class LiveConsole:
    app: Any
    session: Any
    root: Path
    config: PlateauConfig

    @property
    def profiles_dir(self) -> Path:
        return self.root / "profiles.d"


@pytest.fixture
async def live_console(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server_flag_cache: Path
) -> Any:
    """`make(host=None, launch=True, sweeps=None, python=None)` -> LiveConsole: the real app
    with a live HostSession on a simulated host under tmp_path (local unless `host` is given).
    Teardown stops the server and closes the session."""
    import sys

    from console.app.app import PlateauApp
    from console.config_models import SweepPreset
    from console.session.service import HostSession
    from tests.support.server_fixtures import free_port

    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    made: list[LiveConsole] = []

    def make(
        host: HostConfig | None = None,
        *,
        launch: bool = True,
        sweeps: dict[str, dict[str, Any]] | None = None,
        python: str | None = None,
    ) -> LiveConsole:
        root = tmp_path
        host = host or HostConfig(name="app-live", local=True, python=python or sys.executable,
                                  run_dir=str(root / "run"))
        host = host.model_copy(update={"profile": "cutlass-moe", "run_dir": str(root / "run"),
                                       "sim_state_file": str(root / "gpu-state.json")})
        config = PlateauConfig(
            hosts=[host],
            profiles=sim_profiles(root, free_port()),
            sweeps={k: SweepPreset(**v) for k, v in (sweeps or {"default": TINY_SWEEP}).items()},
            ui=UiConfig(gpu_interval_s=0.5),
        )
        session = HostSession(
            host, config, launch_profile="cutlass-moe" if launch else None,
            store_path=root / "runs.db", flag_cache_dir=server_flag_cache,
        )
        app = PlateauApp(LoadedConfig(config, None), [session], tick_seconds=None,
                         profiles_dir=root / "profiles.d")
        console = LiveConsole(app, session, root, config)
        made.append(console)
        return console

    yield make
    for console in made:
        try:
            await aio.wait_for(console.session.stop_server(), timeout=30)
        finally:
            await console.session.close()
            _kill_recorded_server(console.root / "run" / "server.json")


def _kill_recorded_server(record: Path) -> None:
    """Safety net: SIGKILL a server group a test left behind (by its launch record)."""
    import json
    import os
    import signal

    try:
        pgid = int(json.loads(record.read_text())["pgid"])
        if pgid > 1 and pgid != os.getpgid(0):
            os.killpg(pgid, signal.SIGKILL)
    except (OSError, ValueError, KeyError):
        pass


async def wait_until(pilot: Any, condition: Callable[[], bool], what: str,
                     timeout: float = 30.0) -> None:
    """Let the app run until `condition()` holds (fails with the host's recent events)."""
    import time

    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            app = pilot.app
            events = [f"{r.source}: {r.message}" for r in app.all_events()][-12:]
            raise AssertionError(f"timed out waiting for {what}; events:\n" + "\n".join(events))
        await pilot.pause(0.05)
