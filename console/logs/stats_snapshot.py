"""What the server strip renders of a server's load (`ServerStats`), apart from the aggregator
that computes it (console/logs/server_stats.py, with the batch-line, /metrics and DP-rank
readers it needs): the console's first frame draws an empty one before any line is read, and
imports only this."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class ServerStats:
    """What the server strip renders: latest values plus short histories (oldest first)."""

    source: Literal["none", "log", "metrics"] = "none"
    gen_throughput: float | None = None
    input_throughput: float | None = None
    running_reqs: float | None = None
    queue_reqs: float | None = None
    token_usage: float | None = None
    num_tokens: int | None = None
    cuda_graph: bool | None = None
    accept_len: float | None = None
    gen_history: tuple[float, ...] = ()
    running_history: tuple[float, ...] = ()
    queue_history: tuple[float, ...] = ()
    usage_history: tuple[float, ...] = ()
    cuda_graph_history: tuple[bool, ...] = ()
    retractions: int = 0
    """KV-pool-full retractions seen in the log since the aggregator started."""
    last_timestamp: str | None = None
    gen_idle: bool = False
    """No generation for IDLE_AFTER_S (or /metrics says nothing runs): `gen_throughput` is
    None and `gen_last` is the last rate seen, for "idle · last N tok/s"."""
    gen_last: float | None = None
    dp_ranks: int | None = None
    """With DP ranks: how many the node figures above sum (console/sglang/dp.py)."""
    version: int = 0
    """Increments on every change, so a widget can skip identical updates."""
