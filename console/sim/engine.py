"""The continuous-batching scheduler: one asyncio task, one wakeup per simulated GPU step.

Each step is either a prefill batch (FCFS admission under --max-running-requests, chunked by
--chunked-prefill-size, gated by KV capacity) or a decode step for every running request.
Prefill goes first whenever there is something to admit or a chunked prompt to continue, as in
SGLang's `Scheduler.get_next_batch_to_run` ("Run prefill first if possible"); with
--enable-mixed-chunk the running requests decode inside that prefill step (`mix_with_running`).
After a step every affected request gets its new token appended and its waiter (if its HTTP
handler is waiting) resolved, so streaming handlers coalesce whatever arrived since their last
write.
Ideal-timing mode (`IdealEngine`) bypasses the model: fixed TTFT and inter-token interval.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from console import aio
from console.sim import shapes
from console.sim.config import SimConfig, leader_prefix
from console.sim.logs import SimLog
from console.sim.noise import GpuNoise
from console.sim.radix import Node, RadixCache
from console.sim.tokens import EOS_TOKEN_ID, TokenSource
from console.sim.warmup import SimWarmup

NEW_TOKEN_RATIO_INIT = 0.7
NEW_TOKEN_RATIO_MIN = 0.1
NEW_TOKEN_RATIO_DECAY = (NEW_TOKEN_RATIO_INIT - NEW_TOKEN_RATIO_MIN) / 600
CATCH_UP_LIMIT_S = 0.5


class SimCrash(Exception):
    """The simulated scheduler died (e.g. the NaN failure mode)."""


@dataclass(eq=False)
class Req:
    rid: str
    input_len: int
    max_new: int
    ordinal: int
    created: float
    eos_at: int | None = None  # output index where EOS is sampled (None: never, ignore_eos)
    ids: list[int] | None = None  # prompt token ids, for the prefix cache (None: uncacheable)
    cached: int = 0  # prompt tokens the prefix cache supplied at admission
    node: Node | None = None  # the prefix-cache node this request locks
    output_ids: list[int] = field(default_factory=list)
    prefilled: int = 0
    kv: int = 0
    finished: bool = False
    finish_reason: dict[str, Any] | None = None
    num_retractions: int = 0
    first_token_time: float | None = None
    finish_time: float | None = None
    last_token_time: float | None = None
    waiter: asyncio.Future[None] | None = None
    # Set by a parked streaming handler (console.sim.streams): writes new tokens from the
    # engine's wakeup; True when the handler need not wake for them.
    sink: Callable[[], bool] | None = None

    @property
    def prefill_need(self) -> int:
        return self.input_len + len(self.output_ids)

    def notify(self) -> None:
        sink = self.sink
        if sink is not None and sink():
            return
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def wait(self) -> None:
        self.waiter = asyncio.get_running_loop().create_future()
        await self.waiter
        self.waiter = None


@dataclass(frozen=True)
class GpuCounters:
    """Cumulative GPU-time counters up to an instant, the step in progress included (what a
    real GPU's counters would read): sampled twice, their difference over the interval is a
    utilisation, a clock average, a share of time power-capped."""

    busy_s: float = 0.0  # any kernel running (compute, all-reduce, launches)
    sm_busy_s: float = 0.0  # SMs computing (sets the power draw)
    prefill_busy_s: float = 0.0
    clock_s: float = 0.0  # busy seconds x SM clock / max
    power_capped_s: float = 0.0  # busy seconds run with the clock cut by the power limit
    thermal_s: float = 0.0  # busy seconds run thermally slowed


@dataclass(frozen=True)
class StepInFlight:
    """The step the GPU is running now, on the engine's (catch-up) timeline."""

    start: float
    end: float
    sm_share: float
    clock: float
    power_capped: bool
    thermal: bool
    prefill: bool


@dataclass
class EngineStats:
    prompt_tokens_total: int = 0
    generation_tokens_total: int = 0
    num_requests_total: int = 0
    num_aborted_total: int = 0
    num_retracted_total: int = 0
    busy_s: float = 0.0  # wall seconds spent inside steps
    sm_busy_s: float = 0.0  # of which SMs computed (not waiting on all-reduce or launches)
    sm_clock_ratio: float = 1.0  # last step's SM clock / max (power cap, thermal)
    thermal_slowdown: bool = False  # the last decode step ran thermally slowed
    power_capped: bool = False  # the last decode step's clock was cut by the power limit
    clock_s: float = 0.0
    power_capped_s: float = 0.0
    thermal_s: float = 0.0
    in_flight: StepInFlight | None = None
    prefill_busy_s: float = 0.0
    pcie_bytes: float = 0.0
    last_gen_throughput: float = 0.0
    last_decode_log_at: float = 0.0  # time.monotonic() of the last Decode line
    cuda_graph_passes: int = 0
    ttft: list[float] = field(default_factory=list)  # drained by the metrics collector
    itl: list[float] = field(default_factory=list)
    e2e: list[float] = field(default_factory=list)

    def begin_step(self, step: StepInFlight) -> None:
        self.in_flight = step

    def end_step(self) -> None:
        """Book the step in progress whole (its partial share stops being extrapolated)."""
        step = self.in_flight
        if step is None:
            return
        self.in_flight = None
        seconds = max(0.0, step.end - step.start)
        self._book(step, seconds)

    def _book(self, step: StepInFlight, seconds: float) -> None:
        self.busy_s += seconds
        self.sm_busy_s += seconds * step.sm_share
        self.prefill_busy_s += seconds if step.prefill else 0.0
        self.clock_s += seconds * step.clock
        self.power_capped_s += seconds if step.power_capped else 0.0
        self.thermal_s += seconds if step.thermal else 0.0

    def counters(self, now: float) -> GpuCounters:
        """The counters at `now` (loop time): finished steps plus the elapsed part of the one
        in progress, so a sample taken in the middle of a long step reads it busy."""
        step = self.in_flight
        part = 0.0 if step is None else min(max(0.0, now - step.start), step.end - step.start)

        def share(flag: bool) -> float:
            return part if flag else 0.0

        return GpuCounters(
            busy_s=self.busy_s + part,
            sm_busy_s=self.sm_busy_s + (part * step.sm_share if step else 0.0),
            prefill_busy_s=self.prefill_busy_s + (share(step.prefill) if step else 0.0),
            clock_s=self.clock_s + (part * step.clock if step else 0.0),
            power_capped_s=self.power_capped_s + (share(step.power_capped) if step else 0.0),
            thermal_s=self.thermal_s + (share(step.thermal) if step else 0.0),
        )


GEN_THROUGHPUT_STALENESS_S = 30.0
"""SGLang's exported gen_throughput drops to 0 once no Decode line came for this long
(`metrics_reporter.py:74,266-274`, `_current_gen_throughput`)."""


def current_gen_throughput(stats: EngineStats, now: float) -> float:
    if now - stats.last_decode_log_at > GEN_THROUGHPUT_STALENESS_S:
        return 0.0
    return stats.last_gen_throughput


class BaseEngine:
    def __init__(self, cfg: SimConfig, log: SimLog, *, record_latencies: bool = False,
                 dp_rank: int = 0, stats: EngineStats | None = None) -> None:
        """`dp_rank`, `stats`: one DP rank of several (console/sim/dp.py), its log prefix that
        rank's and its counters the node's, shared with the other ranks."""
        self.cfg = cfg
        self.log = log
        self.tokens = TokenSource(cfg.sim.seed)
        self.stats = stats if stats is not None else EngineStats()
        self.record = record_latencies
        self.waiting: deque[Req] = deque()
        self.running: list[Req] = []
        self.kv_used = 0
        self.capacity = max(1, cfg.profile.max_total_num_tokens)
        self.paused = False
        self._wake = asyncio.Event()
        self._ordinal = itertools.count()
        self.prefix = leader_prefix(cfg.server_args, dp_rank)
        # GPU telemetry (the step in flight, PCIe bytes) is booked by DP rank 0 alone: the
        # GPU state shows its GPUs' pattern for every GPU (the ranks are dealt alike).
        self.telemetry = dp_rank == 0
        self.decode_steps = 0
        self._batch: dict[Req, None] | None = None  # requests with news in this wakeup
        # Admitted by the prefill step in progress: out of the queue, not yet running (a drain
        # or a flush that looked only at those two saw nothing in flight).
        self.prefilling: list[Req] = []
        # SGLang's radix cache, on unless --disable-radix-cache (server_args.py); the ideal
        # engine never prefills, so it has none.
        self.tree: RadixCache | None = None

    def new_req(self, rid: str, input_len: int, max_new: int, ignore_eos: bool,
                ids: list[int] | None = None) -> Req:
        ordinal = next(self._ordinal)
        req = Req(rid=rid, input_len=max(1, input_len), max_new=max(1, max_new),
                  ordinal=ordinal, created=time.monotonic(), ids=ids)
        if not ignore_eos:
            # A real model samples EOS somewhere; most benchmark-length requests run to length.
            draw = ((ordinal + 1) * 2654435761) % 1000
            if draw < 150:
                req.eos_at = 1 + (ordinal * 40503) % max(1, req.max_new)
        return req

    def submit(self, req: Req) -> None:
        self.stats.num_requests_total += 1
        self.stats.prompt_tokens_total += req.input_len
        self.waiting.append(req)
        self._wake.set()

    def abort(self, req: Req) -> None:
        if req.finished:
            return
        if req in self.waiting:
            self.waiting.remove(req)
        elif req in self.running:
            self.running.remove(req)
        self._free(req)
        self._finish(req, {"type": "abort", "message": "Abort request.", "status_code": 200,
                           "err_type": None}, time.monotonic())
        self.stats.num_aborted_total += 1

    def abort_all(self) -> None:
        for req in self.requests():
            self.abort(req)

    def requests(self) -> list[Req]:
        """Every request the scheduler holds: queued, being prefilled, running."""
        return [*self.waiting, *self.prefilling, *self.running]

    @property
    def in_flight(self) -> int:
        return len(self.waiting) + len(self.prefilling) + len(self.running)

    def _free(self, req: Req) -> None:
        """Give back the request's own KV and its lock on the prefix cache, caching nothing
        (an abort or a retraction: mem_cache/common.py release_kv_cache(checkpoint=False))."""
        self.kv_used -= req.kv
        req.kv = 0
        self._unlock(req)

    def _unlock(self, req: Req) -> None:
        if req.node is not None and self.tree is not None:
            self.kv_used -= self.tree.unlock(req.node)
        req.node = None

    def flush_prefix_cache(self) -> None:
        """/flush_cache empties the tree (Scheduler.flush_cache -> tree_cache.reset())."""
        if self.tree is not None:
            self.tree.reset()

    def _finish(self, req: Req, reason: dict[str, Any], now: float) -> None:
        req.finished = True
        req.finish_reason = reason
        req.finish_time = now
        if self.record:
            self.stats.e2e.append(now - req.created)
        self._notify(req)

    def _notify(self, req: Req) -> None:
        """Tell `req`'s handler (or stream sink) it has news; inside a batch, once per batch."""
        if self._batch is None:
            req.notify()
        else:
            self._batch[req] = None

    def _emit(self, req: Req, now: float) -> bool:
        """Append one output token; return True when the request finished."""
        index = len(req.output_ids)
        token = self.tokens.token(req.ordinal, index)
        if req.eos_at is not None and index + 1 >= req.eos_at:
            token = EOS_TOKEN_ID
        req.output_ids.append(token)
        self.stats.generation_tokens_total += 1
        if req.first_token_time is None:
            req.first_token_time = now
            if self.record:
                self.stats.ttft.append(now - req.created)
        elif self.record and req.last_token_time is not None:
            self.stats.itl.append(now - req.last_token_time)
        req.last_token_time = now
        if token == EOS_TOKEN_ID:
            self._finish(req, {"type": "stop", "matched": EOS_TOKEN_ID}, now)
            return True
        if len(req.output_ids) >= req.max_new:
            self._finish(req, {"type": "length", "length": req.max_new}, now)
            return True
        self._notify(req)
        return False

    async def run(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError


class Engine(BaseEngine):
    """Model-driven continuous batching."""

    def __init__(self, cfg: SimConfig, log: SimLog, *, record_latencies: bool = False,
                 dp_rank: int = 0, stats: EngineStats | None = None) -> None:
        super().__init__(cfg, log, record_latencies=record_latencies, dp_rank=dp_rank,
                         stats=stats)
        self.profile = cfg.profile
        self.speed = cfg.sim.speed
        self.new_token_ratio = NEW_TOKEN_RATIO_INIT
        chunked = cfg.chunked_prefill_size
        self.chunk_budget = chunked if chunked > 0 else int(cfg.server_args["max_prefill_tokens"])
        self.log_interval = max(1, int(cfg.server_args["decode_log_interval"]))
        self._log_tokens = 0
        self._log_t = time.monotonic()
        self._log_clock: float | None = None  # the simulated GPU's time of the last Decode line
        self._prefill_log_t = time.monotonic()
        self._nan_armed = _nan_matches(cfg)
        self.rng = self.tokens.rng
        self.noise = GpuNoise(self.rng, cfg.sim.boot_spread)
        self.warmup = SimWarmup(cfg.version, log, self.prefix) if cfg.sim.warmup else None
        self.last_step_kind = "idle"
        # SGLang's `is_mixed_chunk`: --enable-mixed-chunk only acts with chunked prefill on.
        self.mixed_chunk = bool(cfg.server_args.get("enable_mixed_chunk")) and chunked > 0
        if not cfg.server_args.get("disable_radix_cache"):
            self.tree = RadixCache()
        self._batch_cached = 0  # #cached-token of the prefill batch being built
        self.spec = cfg.speculative
        # A verify step holds num_draft_tokens KV slots per request (1 without speculation).
        self.step_slots = self.profile.verify_tokens
        self._spec_kept = 0  # tokens kept per request, summed over the interval's steps
        self._spec_steps = 0

    # ---- scheduling -------------------------------------------------------------------------
    def _reserved_future(self, extra: list[Req]) -> float:
        remaining = sum(r.max_new - len(r.output_ids) for r in self.running)
        remaining += sum(r.max_new - len(r.output_ids) for r in extra)
        return remaining * self.new_token_ratio

    def _schedule_prefill(self, decoding: int = 0) -> tuple[list[Req], int, list[Req]]:
        """Return (completed requests, new tokens, partially prefilled requests).

        `decoding` running requests ride along in a mixed step: each takes one token of the
        chunk budget (SGLang's PrefillAdder `mixed_with_decode_tokens`)."""
        if self.paused or not self.waiting:
            return [], 0, []
        done: list[Req] = []
        partial: list[Req] = []
        tokens = decoding
        limit = self.cfg.max_running_requests
        while self.waiting and len(self.running) + len(done) < limit:
            if tokens >= self.chunk_budget:
                break
            req = self.waiting[0]
            fresh = req.prefilled == 0
            if fresh:
                self._match_prefix(req)
            need = req.prefill_need - req.prefilled
            free = self.capacity - self.kv_used - self._reserved_future(done)
            if fresh and need + 1 > free and (self.running or done):
                self._unmatch(req)
                break  # KV full: wait in the queue until running requests finish
            if fresh:
                self._batch_cached += req.cached  # PrefillAdder.log_hit_tokens += prefix_len
            take = min(need, self.chunk_budget - tokens)
            req.prefilled += take
            req.kv += take
            self._alloc(take)
            tokens += take
            if req.prefilled >= req.prefill_need:
                self.waiting.popleft()
                done.append(req)
            else:
                partial.append(req)
                break
        return done, tokens - decoding, partial

    def _alloc(self, tokens: int) -> None:
        """Take `tokens` KV slots, evicting least-recently-used cached prefixes when the pool
        has no free slot left (schedule_batch.py alloc_token_slots -> tree_cache.evict)."""
        self.kv_used += tokens
        tree = self.tree
        if tree is not None:
            excess = self.kv_used + tree.evictable - self.capacity
            if excess > 0:
                tree.evict(excess)

    def _key(self, req: Req) -> list[int] | None:
        """The tokens whose KV the request holds: prompt, then what it generated."""
        if req.ids is None:
            return None
        return req.ids + req.output_ids if req.output_ids else req.ids

    def _match_prefix(self, req: Req) -> None:
        """Admission: the cached prefix needs no prefill (at most input - 1 tokens:
        schedule_batch.py `_compute_max_prefix_len`); the request locks it."""
        key = self._key(req)
        if self.tree is None or key is None or len(key) < 2:
            return
        matched, node = self.tree.match(key[: len(key) - 1])
        if matched:
            self.kv_used += self.tree.lock(node)
            req.node, req.cached, req.prefilled = node, matched, matched

    def _unmatch(self, req: Req) -> None:
        self._unlock(req)
        req.cached = req.prefilled = 0

    def _checkpoint(self, req: Req) -> None:
        """After its prefill the prompt joins the tree, so later requests share it while this
        one still runs (batch_result_processor.py checkpoint_kv_cache); the request's own
        copy of those tokens becomes the tree's."""
        key = self._key(req)
        tree = self.tree
        if tree is None or key is None:
            return
        _, node = tree.insert(key)
        self.kv_used += tree.lock(node)
        self._unlock(req)
        req.node = node
        self.kv_used -= req.kv
        req.kv = 0

    def _retract_for_decode(self) -> None:
        if self.kv_used + len(self.running) * self.step_slots <= self.capacity:
            return
        old_ratio = self.new_token_ratio
        retracted = 0
        gained = 0
        # SGLang's "length" policy: retract the requests with the fewest decoded tokens first.
        self.running.sort(key=lambda r: (len(r.output_ids), -r.input_len), reverse=True)
        while self.running and self.kv_used + len(self.running) * self.step_slots > self.capacity:
            req = self.running.pop()
            if not self.running:
                self.running.append(req)
                break
            gained += req.kv
            self._free(req)
            req.prefilled = req.cached = 0
            req.num_retractions += 1
            self.waiting.appendleft(req)
            retracted += 1
        if retracted:
            self.stats.num_retracted_total += retracted
            self.new_token_ratio = min(1.0, self.new_token_ratio + 0.1 * retracted)
            self.log.warning(
                f"KV cache pool is full. Retract requests. #retracted_reqs: {retracted}, "
                f"#new_tokens_gained: {gained}, #new_token_ratio: {old_ratio:.4f} -> "
                f"{self.new_token_ratio:.4f}",
                self.prefix,
            )

    def _noise(self) -> float:
        """Step jitter x launch factor x drift (console/sim/noise.py says why and how big)."""
        return self.noise.factor()

    def _warming(self, seconds: float) -> float:
        """A forward step's time on a server still warming up (--sim-warmup)."""
        return seconds if self.warmup is None else self.warmup.stretch(seconds)

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        t_end = loop.time()
        while True:
            if (not self.waiting and not self.running) or (self.paused and not self.running):
                self.last_step_kind = "idle"
                self._wake.clear()
                await self._wake.wait()
                # The decode-log window is not restarted on wake: SGLang's is not either
                # (metrics_reporter.py:942-944), so the first Decode line after idle spans it.
                t_end = loop.time()
                continue
            now = loop.time()
            # A late wakeup (the machine running the sim is busy) must not slow the simulated
            # GPU down: the next step starts where the last one ended, and the steps catch up.
            # Only when far behind (the process was stopped) does the clock resync.
            start = t_end if now - t_end < CATCH_UP_LIMIT_S else now
            # Prefill first, a chunked prompt's next chunk included (SGLang continues
            # `chunked_req` in the next prefill round): without --enable-mixed-chunk the
            # running batch waits for all of it, so a smaller --chunked-prefill-size alone
            # does not shorten the stall. With it, each chunk step also decodes the running
            # batch, and the chunk size bounds the gap between their tokens: the TTFT/ITL
            # trade-off of plateau-causes.md, "Chunked prefill".
            riding = len(self.running) if self.mixed_chunk else 0
            done, new_tokens, partial = self._schedule_prefill(riding)
            if new_tokens:
                t_end = await self._prefill_step(start, done, partial, new_tokens, riding)
                continue
            if not self.running:
                # Waiting requests that cannot be admitted and nothing running: head is too
                # large for the pool. Abort it like SGLang's input-length check would.
                req = self.waiting.popleft()
                self._finish(req, {"type": "abort", "status_code": 400, "err_type": None,
                                   "message": f"Input length ({req.input_len} tokens) exceeds "
                                   f"the maximum allowed length ({self.capacity} tokens). Use a "
                                   "shorter input or enable --allow-auto-truncate."},
                             time.monotonic())
                continue
            self._retract_for_decode()
            batch = len(self.running)
            parts = self._decode_parts(batch)
            noise = self._noise()
            duration = self._warming(sum(parts.values()) * noise)
            self.last_step_kind = "decode"
            t_end = start + duration / self.speed
            idle = (parts["allreduce"] + parts["eager"]) * noise / max(1e-12, duration)
            self._begin(start, t_end, 1.0 - idle, prefill=False)
            try:
                await asyncio.sleep(max(0.0, t_end - loop.time()))
            finally:
                self._end()
            self.noise.advance(duration)
            self._pcie(self.profile.allreduce_bytes(batch * self.step_slots))
            if self.profile.uses_graph(batch):
                self.stats.cuda_graph_passes += 1
            if self.spec is None:
                self._advance_running(time.monotonic())
                self._log_tokens += batch
            else:  # each request keeps the step's accept length (console/sim/speculative.py)
                kept = self.spec.tokens_at(self.decode_steps)
                self._log_tokens += self._advance_running(time.monotonic(), kept)
                self._spec_kept += kept
                self._spec_steps += 1
            self.decode_steps += 1
            self.new_token_ratio = max(NEW_TOKEN_RATIO_MIN,
                                       self.new_token_ratio - NEW_TOKEN_RATIO_DECAY)
            if self.decode_steps % self.log_interval == 0:
                self._log_decode(batch, t_end)
            if self._nan_armed and self.decode_steps >= self.cfg.sim.nan_after_steps:
                raise SimCrash("NaN")

    async def _prefill_step(self, start: float, done: list[Req], partial: list[Req],
                            new_tokens: int, riding: int) -> float:
        """One prefill (or mixed prefill + decode) forward; returns when it ended."""
        loop = asyncio.get_running_loop()
        seqs = len(done) + len(partial)
        clock = self.stats.sm_clock_ratio
        duration = self.profile.prefill_seconds(new_tokens, seqs, clock)
        if riding:
            # One forward: weights stream once; the decoding requests add their per-token
            # compute and attention over their cached tokens (ScheduleBatch.mix_with_running
            # turns them into extend-by-one requests of the same batch; under speculative
            # decoding too: speculative_hook.py:1104 "Mixed steps degrade running requests to
            # a plain 1-token decode").
            duration += self.profile.decode_parts(riding, self.kv_used, clock,
                                                  tokens_per_req=1)["compute"]
        duration = self._warming(duration * self._noise())
        self.last_step_kind = "prefill"
        t_end = start + duration / self.speed
        self._log_prefill(done, partial, new_tokens)
        self.prefilling = done
        sm_share = max(0.0, duration - self.profile.comm_seconds()) / max(1e-12, duration)
        self._begin(start, t_end, sm_share, prefill=True)
        try:
            await asyncio.sleep(max(0.0, t_end - loop.time()))
        finally:
            self.prefilling = []
            self._end()
        self.noise.advance(duration)
        self._pcie(self.profile.allreduce_bytes(new_tokens + riding))
        stamp = time.monotonic()
        if riding:
            self._advance_running(stamp)
            self._log_tokens += riding
        for req in done:
            if not req.finished:
                self._checkpoint(req)
        # Aborted while prefilling: finished already, never running.
        self.running.extend(r for r in done if self._next_token(r, stamp))
        return t_end

    def _advance_running(self, stamp: float, tokens: int = 1) -> int:
        """Every running request got its next `tokens` tokens in the step that just ended
        (fewer where it finished); returns the tokens emitted."""
        before = self.stats.generation_tokens_total
        running = []
        for req in self.running:
            if all(self._next_token(req, stamp) for _ in range(tokens)):
                running.append(req)
        self.running = running
        return self.stats.generation_tokens_total - before

    def _next_token(self, req: Req, stamp: float) -> bool:
        """Append `req`'s token of the step that ended at `stamp`; True while it runs on."""
        if req.finished:
            return False
        req.kv += 1
        self.kv_used += 1
        if self._emit(req, stamp):
            self._release(req)
            return False
        return True

    def _end(self) -> None:
        if self.telemetry:
            self.stats.end_step()

    def _pcie(self, nbytes: float) -> None:
        if self.telemetry:
            self.stats.pcie_bytes += nbytes

    def _begin(self, start: float, end: float, sm_share: float, *, prefill: bool) -> None:
        """GPU telemetry: the step now running, at the clock the last decode step set."""
        if not self.telemetry:
            return
        stats = self.stats
        stats.begin_step(StepInFlight(start=start, end=end, sm_share=sm_share,
                                      clock=stats.sm_clock_ratio,
                                      power_capped=stats.power_capped,
                                      thermal=stats.thermal_slowdown, prefill=prefill))

    def _decode_parts(self, batch: int) -> dict[str, float]:
        """The step's terms at the clock the power limit allows: under load the SMs are busy
        for the non-communication share of the step, which sets the board's power demand."""
        parts = self.profile.decode_parts(batch, self.kv_used)
        total = sum(parts.values())
        busy = (parts["base"] + parts["weights"] + parts["compute"]) / max(1e-9, total)
        clock = self.profile.clock_ratio(busy, 0.45 * busy)
        self.stats.sm_clock_ratio = clock
        self.stats.thermal_slowdown = self.profile.thermal_slowdown(busy, 0.45 * busy)
        self.stats.power_capped = self.profile.power_capped(busy, 0.45 * busy)
        if clock < 1.0:
            parts = self.profile.decode_parts(batch, self.kv_used, clock)
        return parts

    def _release(self, req: Req) -> None:
        """A finished request's prompt and output stay cached, unlocked (evictable):
        mem_cache/common.py release_kv_cache(checkpoint=True)."""
        key = self._key(req)
        if self.tree is not None and key is not None:
            self.tree.insert(key[: len(key) - 1])  # the last token's KV was never computed
        self._free(req)
        self._alloc(0)  # evict if the tree outgrew the pool

    # ---- logging ----------------------------------------------------------------------------
    def _log_prefill(self, done: list[Req], partial: list[Req], new_tokens: int) -> None:
        now = time.monotonic()
        gap = max(1e-6, now - self._prefill_log_t)
        self._prefill_log_t = now
        pending = sum(r.prefill_need - r.prefilled for r in self.waiting)
        sa = self.cfg.server_args
        graph = sa["cuda_graph_backend_prefill"] != "disabled" and new_tokens <= int(
            sa["cuda_graph_max_bs_prefill"])
        cached, self._batch_cached = self._batch_cached, 0
        self.log.sglang(shapes.prefill_batch(
            self.cfg.traits, seqs=len(done) + len(partial), new=new_tokens, cached=cached,
            usage=self.kv_used / self.capacity, running=len(self.running),
            queued=len(self.waiting) - len(partial), pending=pending, graph=graph,
            throughput=new_tokens / gap), self.prefix)

    def _log_decode(self, batch: int, clock: float) -> None:
        """SGLang's gen throughput is tokens over the wall time between Decode lines
        (metrics_reporter.py), which on a GPU is the GPU's time. Here that is the simulated
        clock (`clock`, where the step ended on the catch-up timeline): a late wakeup of this
        process is not a slower GPU, so the figure depends on the model, not the CPU."""
        now = time.monotonic()
        since = self._log_clock if self._log_clock is not None else clock - (now - self._log_t)
        gap = max(1e-6, clock - since)
        self._log_clock = clock
        throughput = self._log_tokens / gap
        self.stats.last_gen_throughput = throughput
        self.stats.last_decode_log_at = now
        self._log_t = now
        self._log_tokens = 0
        self.log.sglang(shapes.decode_batch(
            self.cfg.traits, running=batch, tokens=self.kv_used,
            usage=self.kv_used / self.capacity, graph=self.profile.uses_graph(batch),
            throughput=throughput, queued=len(self.waiting), accept=self._accept()),
            self.prefix)

    def _accept(self) -> tuple[float, float] | None:
        """The interval's (accept len, accept rate), then a new interval
        (metrics_reporter.py:973-1005)."""
        if self.spec is None or not self._spec_steps:
            return None
        length = self._spec_kept / self._spec_steps
        drafts = self.spec.num_draft_tokens - 1
        self._spec_kept = self._spec_steps = 0
        return length, (length - 1.0) / drafts if drafts > 0 else 0.0



class IdealEngine(BaseEngine):
    """Ideal-timing mode: token k of a request is due at arrival + TTFT + k * ITL, exactly.

    One heap, one task: each wakeup emits every token that is due, so thousands of streams
    cost one timer, not one timer each.
    """

    def __init__(self, cfg: SimConfig, log: SimLog, *, record_latencies: bool = False) -> None:
        super().__init__(cfg, log, record_latencies=record_latencies)
        self.ttft = (cfg.sim.ideal_ttft_ms or 0.0) / 1000.0
        self.itl = (cfg.sim.ideal_itl_ms or 0.0) / 1000.0
        self._heap: list[tuple[float, int, Req]] = []
        self._seq = itertools.count()
        self.last_step_kind = "idle"

    def submit(self, req: Req) -> None:
        self.stats.num_requests_total += 1
        self.stats.prompt_tokens_total += req.input_len
        self.running.append(req)
        heapq.heappush(self._heap, (req.created + self.ttft, next(self._seq), req))
        # A burst of arrivals keeps the loop busy with handlers before the engine's timer
        # gets its turn: tokens that fell due meanwhile leave from here, not after the burst.
        now = time.monotonic()
        if self._heap[0][0] <= now:
            self._emit_due(now)
        self._wake.set()

    def abort(self, req: Req) -> None:
        if not req.finished:
            self._finish(req, {"type": "abort", "message": "Abort request.", "status_code": 200,
                               "err_type": None}, time.monotonic())
            self.stats.num_aborted_total += 1
            if req in self.running:
                self.running.remove(req)

    def _emit_due(self, now: float) -> None:
        """Every token due by `now` first, then each stream told once: its sink writes all it
        got in one event (console/sim/streams.py), in this same wakeup."""
        heap = self._heap
        finished: list[Req] = []
        batch: dict[Req, None] = {}
        self._batch = batch
        try:
            while heap and heap[0][0] <= now:
                due, _, req = heapq.heappop(heap)
                if req.finished:
                    continue
                if self._emit(req, now):
                    finished.append(req)
                else:
                    heapq.heappush(heap, (due + self.itl, next(self._seq), req))
        finally:
            self._batch = None
        if finished:
            done = set(finished)
            self.running = [r for r in self.running if r not in done]
        for req in batch:
            req.notify()

    async def run(self) -> None:
        heap = self._heap
        while True:
            if not heap:
                self.last_step_kind = "idle"
                self._wake.clear()
                await self._wake.wait()
                continue
            self.last_step_kind = "decode"
            now = time.monotonic()
            due = heap[0][0]
            if due > now:
                self._wake.clear()
                await aio.wait_event(self._wake, due - now)
                continue
            self._emit_due(now)
            await asyncio.sleep(0)


def _nan_matches(cfg: SimConfig) -> bool:
    spec = cfg.sim.nan_when
    if not spec:
        return False
    sa = cfg.server_args
    for key, value in spec.items():
        actual = sa.get(key)
        if actual is None or str(actual).lower() != value.lower():
            return False
    return True
