"""A console on six recorded hosts for the fleet screen's tests: one healthy with a finished
sweep, one decoding eagerly with a full KV pool, a throttled GPU and an XID, one whose server
stopped, one refusing connections, one still connecting, one starting a server. Hermetic:
ReplaySessions (real SGLang 0.5.23 Decode lines through the session's own parser), a fixed
clock, no timers of the app's own."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from console.config import LoadedConfig
from console.gpu.models import GpuSample
from console.logs.assembler import parse_lines
from console.logs.server_stats import StatsAggregator
from console.session.events import (
    ConnectionChanged,
    GpuUpdate,
    ServerStats,
    ServerStatus,
    SessionEvent,
)
from console.session.replay import ReplaySession
from tests.support.app_fixtures import FIXED_NOW, app_config, demo_events, fixed_clock
from tests.support.fleet_fixtures import EAGER_FULL_LINE, GRAPH_LINE, gpu

HOSTS = ["gpu-a1", "gpu-a2", "gpu-b1", "gpu-b2", "gpu-c1", "h200-rack7-node3"]


def stats(host: str, *lines: str) -> ServerStats:
    aggregator = StatsAggregator(clock=lambda: 0.0)
    aggregator.add_events(parse_lines(lines))
    return ServerStats(host, aggregator.snapshot())


def gpus(host: str, *readings: dict[str, Any], seq: int = 1) -> GpuUpdate:
    sample = GpuSample.model_validate({"seq": seq, "gpus": list(readings)})
    return GpuUpdate(host, sample, FIXED_NOW - timedelta(seconds=1))


def ready(host: str, minutes: int = 90) -> list[SessionEvent]:
    return [ConnectionChanged(host, "connected"),
            ServerStatus(host, "ready", version="0.5.23", profile="tp2",
                         since=FIXED_NOW - timedelta(minutes=minutes))]


def host_events(host: str) -> list[SessionEvent]:
    if host == "gpu-a1":
        return demo_events(host)
    if host == "gpu-a2":
        return [*ready(host, 200), stats(host, GRAPH_LINE, EAGER_FULL_LINE),
                gpus(host, gpu(0, clock_reasons=["hw slowdown"]), gpu(1, xid_count=3))]
    if host == "gpu-b1":
        return [ConnectionChanged(host, "connected"),
                ServerStatus(host, "stopped", detail="exited with status 1"),
                gpus(host, gpu(0, util_gpu=0, power_w=80), gpu(1, util_gpu=0, power_w=81))]
    if host == "gpu-b2":
        return [ConnectionChanged(host, "connecting"),
                ConnectionChanged(host, "failed",
                                  "cannot connect to 10.0.0.12:22: Connection refused")]
    if host == "gpu-c1":
        return [ConnectionChanged(host, "connecting")]
    return [ConnectionChanged(host, "connected"),
            ServerStatus(host, "starting", version="0.5.23", profile="tp2"),
            gpus(host, gpu(0, util_gpu=3), gpu(1, util_gpu=2))]


def fleet_app(hosts: list[str] | None = None, *, screen: str = "fleet", **ui: Any) -> Any:
    from console.app.app import PlateauApp

    names = hosts or HOSTS
    loaded: LoadedConfig = app_config(names, **ui)
    sessions = [ReplaySession.from_events(host, host_events(host.name), clock=fixed_clock)
                for host in loaded.config.hosts]
    return PlateauApp(loaded, sessions, clock=fixed_clock, start_screen=screen,
                      tick_seconds=None)
