"""HostStates for the fleet tests, folded from real events: SGLang 0.5.23's own Decode lines
through the session's parser and aggregator, GPU agent samples, server statuses."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from console.gpu.models import GpuSample
from console.logs.assembler import parse_lines
from console.logs.server_stats import StatsAggregator
from console.session.events import ConnectionChanged, GpuUpdate, ServerStats, ServerStatus
from console.session.state import HostState

T0 = datetime(2026, 2, 19, 5, 25, 0, tzinfo=UTC)
# SGLang 0.5.23's Decode batch lines (scheduler_metrics_mixin: the decode log line;
# /work/shared/reference/sglang-0.5.23.md "Decode batch" examples).
GRAPH_LINE = ("[2026-02-19 05:25:03 TP0] Decode batch, #running-req: 64, #token: 91776, "
              "token usage: 0.12, cuda graph: True, gen throughput (token/s): 5321.47, "
              "#queue-req: 0")
EAGER_FULL_LINE = ("[2026-02-19 05:25:04 TP0] Decode batch, #running-req: 160, #token: "
                   "901776, token usage: 0.97, cuda graph: False, gen throughput (token/s): "
                   "4100.50, #queue-req: 37")


def gpu(index: int, **extra: Any) -> dict[str, Any]:
    return {"index": index, "name": "NVIDIA H200", "util_gpu": 50 + 40 * index,
            "mem_used_mib": 100_000, "mem_total_mib": 143_771, "power_w": 400 + 100 * index,
            "power_limit_w": 700, "clock_reasons": [], "xid_count": 0, **extra}


def host_state(*lines: str, gpus: list[dict[str, Any]] | None = None, name: str = "h200-a"
               ) -> HostState:
    """A connected host with a ready server, two GPUs sampled 2 s before T0, and the stats
    of `lines` (SGLang log lines) as the session's aggregator makes them."""
    state = HostState(name, clock=lambda: T0)
    state.apply(ConnectionChanged(name, "connected"))
    state.apply(ServerStatus(name, "ready", version="0.5.23", profile="tp2",
                             since=T0 - timedelta(seconds=90)))
    sample = GpuSample.model_validate({"seq": 1, "gpus": gpus or [gpu(0), gpu(1)]})
    state.apply(GpuUpdate(name, sample, T0 - timedelta(seconds=2)))
    if lines:
        aggregator = StatsAggregator(clock=lambda: 0.0)
        aggregator.add_events(parse_lines(lines))
        state.apply(ServerStats(name, aggregator.snapshot()))
    return state
