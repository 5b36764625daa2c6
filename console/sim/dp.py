"""Data parallelism: one scheduler per DP rank, each with its own KV pool, and the controller
that deals the requests to them.

With `--dp-size N` SGLang runs N replicas (each a TP group with its own scheduler and KV
pool); with attention DP (`--attn-dp-size N`) N schedulers share one TP group. Either way the
tokenizer hands every request to the DataParallelController, which sends it to one rank
(0.5.23 `srt/managers/data_parallel_controller.py`):

- `round_robin` (what `auto` resolves to without PD, `srt/arg_groups/serving_hook.py:217-233`):
  the next active rank after the last one, a counter over the ranks
  (`round_robin_scheduler`, data_parallel_controller.py:880-899).
- `total_requests` / `total_tokens`: the rank with the fewest running + waiting requests (or
  tokens, requests breaking ties), then that rank's count raised at once so a burst spreads
  (`DPBudget.dispatch`, :140-154; `total_tokens_scheduler` adds the prompt's length,
  :918-925). SGLang refreshes the counts from the ranks' load snapshots at most every 20 ms
  (`refresh_load_budget`, :355-361); the sim reads its ranks' loads at every dispatch.
- `follow_bootstrap_room`: PD disaggregation's (:901-910); the sim has no bootstrap rooms and
  deals those round robin.
- Health checks (`HEALTH_CHECK_...` requests) take a counter of their own
  (`dispatch_health_check`, :845-862): they never move the user requests' round robin.

`DpEngine` is what the server talks to (console/sim/server.py, metrics.py, runner.py): it
holds one `Engine` per rank, sums their queues and pools, and runs them side by side. The
ranks share one `EngineStats` (the node's counters); DP rank 0 books the GPU telemetry.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from console.sim.config import SimConfig, dp_ranks
from console.sim.engine import BaseEngine, Engine, EngineStats, Req
from console.sim.logs import SimLog

HEALTH_RID = "HEALTH_CHECK"
T = TypeVar("T")


class Dealer:
    """The DataParallelController's choice of rank for each request (see the module doc)."""

    def __init__(self, ranks: int, method: str) -> None:
        self.ranks = ranks
        self.method = method
        self.round_robin_counter = 0
        self.health_round_robin_counter = 0

    def rank_for(self, req: Req, loads: list[tuple[int, int]]) -> int:
        """`loads`: per rank (requests running + waiting, tokens held + queued)."""
        if req.rid.startswith(HEALTH_RID):
            slot = self.health_round_robin_counter % self.ranks
            self.health_round_robin_counter = (self.health_round_robin_counter + 1) % self.ranks
            return slot
        if self.method == "total_requests":
            counts = [requests for requests, _tokens in loads]
            return counts.index(min(counts))
        if self.method == "total_tokens":
            return min(range(self.ranks), key=lambda i: (loads[i][1], loads[i][0]))
        slot = self.round_robin_counter % self.ranks
        self.round_robin_counter = (self.round_robin_counter + 1) % self.ranks
        return slot


class _NodeView(Generic[T]):
    """An attribute of the node that the ranks hold: read as `read(engine)`, never written."""

    def __init__(self, read: Callable[[DpEngine], T]) -> None:
        self.read = read

    def __get__(self, engine: DpEngine, owner: type | None = None) -> T:
        return self.read(engine)

    def __set__(self, engine: DpEngine, value: T) -> None:
        pass


class DpEngine(BaseEngine):
    """N schedulers behind SGLang's DP controller, seen by the server as one engine."""

    def __init__(self, cfg: SimConfig, log: SimLog, *, record_latencies: bool = False) -> None:
        shared = EngineStats()
        self.ranks = [Engine(cfg, log, record_latencies=record_latencies, dp_rank=k,
                             stats=shared) for k in range(dp_ranks(cfg.server_args))]
        super().__init__(cfg, log, record_latencies=record_latencies, stats=shared)
        self.prefix = self.ranks[0].prefix
        self.dealer = Dealer(len(self.ranks),
                             str(cfg.server_args.get("load_balance_method") or "round_robin"))
        self.dealt: list[int] = []  # the rank each request went to, in arrival order
        self.warmup = _Warmups(self.ranks)

    # ---- the node's view: sums over the ranks ------------------------------------------------
    # BaseEngine's own queue, pool and capacity: the ranks hold them (BaseEngine.__init__'s
    # writes are dropped).
    waiting = _NodeView(lambda self: deque(r for rank in self.ranks for r in rank.waiting))
    running = _NodeView(lambda self: [r for rank in self.ranks for r in rank.running])
    kv_used = _NodeView(lambda self: sum(rank.kv_used for rank in self.ranks))
    capacity = _NodeView(lambda self: sum(rank.capacity for rank in self.ranks))

    @property
    def paused(self) -> bool:
        return all(rank.paused for rank in self.ranks)

    @paused.setter
    def paused(self, value: bool) -> None:
        for rank in getattr(self, "ranks", ()):
            rank.paused = value
            if not value:
                rank._wake.set()

    @property
    def new_token_ratio(self) -> float:
        return max(rank.new_token_ratio for rank in self.ranks)

    @property
    def last_step_kind(self) -> str:
        kinds = {rank.last_step_kind for rank in self.ranks}
        return next((k for k in ("prefill", "decode") if k in kinds), "idle")

    def requests(self) -> list[Req]:
        return [r for rank in self.ranks for r in rank.requests()]

    @property
    def in_flight(self) -> int:
        return sum(rank.in_flight for rank in self.ranks)

    # ---- requests --------------------------------------------------------------------------
    def new_req(self, rid: str, input_len: int, max_new: int, ignore_eos: bool,
                ids: list[int] | None = None) -> Req:
        return self.ranks[0].new_req(rid, input_len, max_new, ignore_eos, ids)

    def submit(self, req: Req) -> None:
        loads = [(rank.in_flight, rank.kv_used + sum(r.input_len for r in rank.waiting))
                 for rank in self.ranks]
        slot = self.dealer.rank_for(req, loads)
        if not req.rid.startswith(HEALTH_RID):
            self.dealt.append(slot)
        self.ranks[slot].submit(req)

    def abort(self, req: Req) -> None:
        for rank in self.ranks:
            if req in rank.requests():
                rank.abort(req)
                return
        if not req.finished:
            self.ranks[0].abort(req)

    def abort_all(self) -> None:
        for rank in self.ranks:
            rank.abort_all()

    def flush_prefix_cache(self) -> None:
        for rank in self.ranks:
            rank.flush_prefix_cache()

    async def run(self) -> None:
        await asyncio.gather(*(rank.run() for rank in self.ranks))


class _Warmups:
    """Each rank warms up on its own (its JIT lines under its prefix)."""

    def __init__(self, ranks: list[Engine]) -> None:
        self.ranks = ranks

    def begin(self) -> None:
        for rank in self.ranks:
            if rank.warmup is not None:
                rank.warmup.begin()

    def __getattr__(self, name: str) -> Any:
        first = self.ranks[0].warmup
        if first is None:
            raise AttributeError(name)
        return getattr(first, name)
