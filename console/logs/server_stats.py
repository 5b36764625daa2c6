"""Rolling server stats for the live strip, from batch lines and/or `/metrics` scrapes."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Literal

from console.hostnum import as_float, drawable
from console.logs.batch_stats import BatchStats, DecodeValues, batch_stats, decode_values
from console.logs.decode_rate import DecodeRateGate
from console.logs.metrics import MetricsSnapshot
from console.logs.models import LogEvent
from console.logs.stats_snapshot import ServerStats
from console.sglang.batch import BATCH_PREFIXES
from console.sglang.dp import NodeBatches, NodeSample
from console.sglang.prefix import dp_rank

_RETRACT_IDS = frozenset({"kv-pool-full-retract", "decode-oom-retract-legacy"})
IDLE_AFTER_S = 10.0
"""A gen rate older than this is not shown as current (SGLang logs a Decode line every 40
decode steps, about once a second under load; its own /metrics gauge goes to 0 after 30 s)."""


class StatsAggregator:
    """Feed events (or BatchStats, or metrics snapshots); read `snapshot()` at 1-2 Hz."""

    def __init__(
        self, history: int = 120, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.history = history
        self.clock = clock
        self._gate = DecodeRateGate()
        self._rate_at: float | None = None  # clock() when the last real rate arrived
        self._gen_last: float | None = None
        self._gen: deque[float] = deque(maxlen=history)
        self._running: deque[float] = deque(maxlen=history)
        self._queue: deque[float] = deque(maxlen=history)
        self._usage: deque[float] = deque(maxlen=history)
        self._graph: deque[bool] = deque(maxlen=history)
        self._latest: dict[str, object] = {}
        self._source: Literal["none", "log", "metrics"] = "none"
        self._retractions = 0
        self._version = 0
        self._snapshot: ServerStats | None = None
        self._node = NodeBatches()  # DP ranks' decode lines, summed to the node

    def add_events(self, events: Iterable[LogEvent]) -> int:
        """Take the batch lines (and retraction warnings) out of `events`; returns how many
        batch lines were used."""
        used = changes = 0
        gen, running, queue, usage, graph = (
            self._gen, self._running, self._queue, self._usage, self._graph)
        latest = self._latest
        pending: DecodeValues | None = None  # latest values not yet written to `latest`
        for event in events:
            message = event.message
            if message.startswith(BATCH_PREFIXES):
                # A DP rank's line (node sums per timestamp) or not the standard decode line:
                # the general path.
                values = None if event.ranks and dp_rank(event.ranks) else decode_values(message)
                if values is None:
                    stats = batch_stats(event)
                    if stats is not None:
                        if pending is not None:
                            self._set_decode_latest(pending)
                            pending = None
                        self.add(stats)
                        used += 1
                    continue
                rate = self._gate.decode_is_rate(event.timestamp)
                if not rate:  # the window spans an idle spell: keep the last real rate
                    values = (*values[:4], -1.0, *values[5:])
                pending = values
                # The standard decode line, applied as add(parse_batch_message(...)) would.
                run, queued, use, on, tput, _tokens, _accept = values
                _push(running, run)
                _push(queue, queued)
                _push(usage, use)
                graph.append(on)
                if rate:
                    _push(gen, tput)
                    self._fresh_rate(tput)
                if event.timestamp is not None:
                    latest["last_timestamp"] = event.timestamp
                used += 1
                changes += 1
            elif event.catalogue_id in _RETRACT_IDS:
                self._retractions += 1
                changes += 1
        if pending is not None:  # the latest values, once: only the last line's survive
            self._set_decode_latest(pending)
        if changes:
            self._source = "log"
            self._version += changes
            self._snapshot = None
        return used

    def _add_rank(self, stats: BatchStats) -> None:
        """One DP rank's batch line: the strip shows the node, the ranks' sum
        (console/sglang/dp.py)."""
        if stats.kind == "prefill":
            self._gate.prefill(stats.running_reqs, stats.timestamp)
            if stats.input_throughput is not None:
                self._latest["input_throughput"] = stats.input_throughput
            return
        rate = self._gate.decode_is_rate(stats.timestamp)
        self._add_node(self._node.add(
            stats.timestamp, dp_rank(stats.ranks), stats.running_reqs, stats.queue_reqs,
            stats.gen_throughput if rate else None, stats.token_usage, stats.cuda_graph))

    def _add_node(self, sample: NodeSample | None) -> None:
        if sample is None:
            return
        latest = self._latest
        self._running.append(float(sample.running))
        latest["running_reqs"] = float(sample.running)
        self._queue.append(float(sample.queue))
        latest["queue_reqs"] = float(sample.queue)
        if sample.token_usage is not None:
            self._usage.append(sample.token_usage)
            latest["token_usage"] = sample.token_usage
        if sample.cuda_graph is not None:
            self._graph.append(sample.cuda_graph)
            latest["cuda_graph"] = sample.cuda_graph
        if sample.gen_throughput is not None:
            self._gen.append(sample.gen_throughput)
            latest["gen_throughput"] = sample.gen_throughput
            self._fresh_rate(sample.gen_throughput)
        if sample.timestamp is not None:
            latest["last_timestamp"] = sample.timestamp
        latest["dp_ranks"] = sample.ranks
        self._source = "log"
        self._changed()

    def _set_decode_latest(self, values: DecodeValues) -> None:
        run, queued, use, on, tput, tokens, accept = values
        latest = self._latest
        latest["running_reqs"] = as_float(run)
        latest["queue_reqs"] = as_float(queued)
        latest["token_usage"] = use
        latest["cuda_graph"] = on
        if tput >= 0:
            latest["gen_throughput"] = tput
        latest["num_tokens"] = tokens
        latest["accept_len"] = accept

    def add(self, stats: BatchStats) -> None:
        if stats.ranks and dp_rank(stats.ranks):
            # A DP rank's line: the node's sample comes out when the next timestamp arrives
            # (the ranks of one step share a timestamp), so the strip is a second behind.
            self._add_rank(stats)
            return
        latest = self._latest
        if stats.running_reqs is not None:
            _push(self._running, stats.running_reqs)
            latest["running_reqs"] = as_float(stats.running_reqs)
        if stats.queue_reqs is not None:
            _push(self._queue, stats.queue_reqs)
            latest["queue_reqs"] = as_float(stats.queue_reqs)
        if stats.token_usage is not None:
            _push(self._usage, stats.token_usage)
            latest["token_usage"] = stats.token_usage
        if stats.cuda_graph is not None:
            self._graph.append(stats.cuda_graph)
            latest["cuda_graph"] = stats.cuda_graph
        if stats.kind == "decode":
            rate = self._gate.decode_is_rate(stats.timestamp)
            if stats.gen_throughput is not None and rate:
                _push(self._gen, stats.gen_throughput)
                latest["gen_throughput"] = stats.gen_throughput
                self._fresh_rate(stats.gen_throughput)
            if stats.num_tokens is not None:
                latest["num_tokens"] = stats.num_tokens
            latest["accept_len"] = stats.accept_len
        else:
            self._gate.prefill(stats.running_reqs, stats.timestamp)
            if stats.input_throughput is not None:
                latest["input_throughput"] = stats.input_throughput
        if stats.timestamp is not None:
            latest["last_timestamp"] = stats.timestamp
        self._source = "log"
        self._changed()

    def add_metrics(self, snapshot: MetricsSnapshot) -> None:
        """A `/metrics` scrape; it is authoritative over batch lines when both arrive."""
        latest = self._latest
        gen = snapshot.gen_throughput
        idle = snapshot.running_reqs == 0
        if idle and gen is not None:
            self._gen.append(0.0)  # nothing runs: the gauge is left over from the last batch
        pairs = (
            ("gen_throughput", None if idle else gen, self._gen),
            ("running_reqs", snapshot.running_reqs, self._running),
            ("queue_reqs", snapshot.queue_reqs, self._queue),
            ("token_usage", snapshot.token_usage, self._usage),
        )
        for key, value, series in pairs:
            if value is not None:
                _push(series, value)
                latest[key] = value
        if snapshot.cuda_graph is not None:
            self._graph.append(snapshot.cuda_graph)
            latest["cuda_graph"] = snapshot.cuda_graph
        if snapshot.spec_accept_length is not None:
            latest["accept_len"] = snapshot.spec_accept_length
        if idle:
            self._go_idle()
        elif gen is not None:
            self._fresh_rate(gen)
        self._source = "metrics"
        self._changed()

    def _fresh_rate(self, value: float) -> None:
        self._rate_at = self.clock()
        self._gen_last = value
        self._latest.pop("gen_idle", None)

    def _go_idle(self) -> None:
        latest = self._latest
        if latest.get("gen_throughput") is not None:
            self._gen_last = latest["gen_throughput"]  # type: ignore[assignment]
        latest["gen_throughput"] = None
        latest["gen_idle"] = True

    def expire(self) -> bool:
        """Age the gen rate out after IDLE_AFTER_S without a new one; True when that changed
        the snapshot (the caller re-publishes it). Call every second or two."""
        if self._latest.get("gen_idle") or self._rate_at is None:
            return False
        if self.clock() - self._rate_at < IDLE_AFTER_S:
            return False
        self._go_idle()
        self._changed()
        return True

    def snapshot(self) -> ServerStats:
        if self._snapshot is None:
            latest = self._latest
            self._snapshot = ServerStats(
                source=self._source,
                gen_throughput=latest.get("gen_throughput"),  # type: ignore[arg-type]
                input_throughput=latest.get("input_throughput"),  # type: ignore[arg-type]
                running_reqs=latest.get("running_reqs"),  # type: ignore[arg-type]
                queue_reqs=latest.get("queue_reqs"),  # type: ignore[arg-type]
                token_usage=latest.get("token_usage"),  # type: ignore[arg-type]
                num_tokens=latest.get("num_tokens"),  # type: ignore[arg-type]
                cuda_graph=latest.get("cuda_graph"),  # type: ignore[arg-type]
                accept_len=latest.get("accept_len"),  # type: ignore[arg-type]
                gen_history=tuple(self._gen),
                running_history=tuple(self._running),
                queue_history=tuple(self._queue),
                usage_history=tuple(self._usage),
                cuda_graph_history=tuple(self._graph),
                retractions=self._retractions,
                last_timestamp=latest.get("last_timestamp"),  # type: ignore[arg-type]
                gen_idle=bool(latest.get("gen_idle")),
                gen_last=self._gen_last,
                dp_ranks=latest.get("dp_ranks"),  # type: ignore[arg-type]
                version=self._version,
            )
        return self._snapshot

    def _changed(self) -> None:
        self._version += 1
        self._snapshot = None


def _push(series: deque[float], value: float | int) -> None:
    """Append `value` to a history when it can be drawn; a host's `nan`, `inf`, negative or
    absurd number is shown as the latest value but never plotted."""
    number = drawable(value)
    if number is not None:
        series.append(number)
