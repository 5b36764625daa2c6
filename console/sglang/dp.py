"""Data-parallel ranks: per-rank batch lines summed to what the node does.

Only the scheduler with `attn_tp_rank == 0 and attn_cp_rank == 0` prints batch stats (0.5.23
`srt/observability/metrics_collector.py:1361-1363`), so with `--dp N` (replicas or attention
DP) each DP group's leader writes its own `Decode batch` line, prefixed `DPk ...`: its
`#running-req`, `#queue-req` and `gen throughput` are that rank's, and the node runs their sum.
With attention DP the ranks step together, so their lines mostly share a timestamp; replicas
drift. A node sample is taken per timestamp: the sum over every rank of its latest line, a
rank's line counting while it is at most HOLD_S old (a rank that went quiet is idle, not
running forever). Token usage is a ratio of each rank's own pool: the node's is the largest.
CUDA graph: False if any rank ran eager, True if every rank that says ran graphs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from console.sglang.prefix import timestamp_seconds

HOLD_S = 3.0


@dataclass(slots=True)
class RankTally:
    lines: int = 0
    running_sum: int = 0
    running_max: int = 0
    gen_sum: float = 0.0
    gen_lines: int = 0

    @property
    def running_mean(self) -> float:
        return self.running_sum / self.lines if self.lines else 0.0


@dataclass(frozen=True, slots=True)
class NodeSample:
    timestamp: str | None
    ranks: int
    running: int
    queue: int
    gen_throughput: float | None
    token_usage: float | None
    cuda_graph: bool | None


@dataclass(slots=True)
class _Latest:
    seconds: float | None
    running: int
    queue: int
    gen: float | None
    usage: float | None
    graph: bool | None


@dataclass(slots=True)
class NodeBatches:
    """Feed every decode line (`add`) in log order; node samples come out as timestamps
    advance, the last one from `flush()`. `tallies` keeps per-rank figures for imbalance."""

    tallies: dict[str, RankTally] = field(default_factory=dict)
    _latest: dict[str, _Latest] = field(default_factory=dict)
    _stamp: str | None = None
    _seconds: float | None = None
    _pending: bool = False

    def add(self, timestamp: str | None, dp: str, running: int | None, queue: int | None,
            gen: float | None, usage: float | None, graph: bool | None) -> NodeSample | None:
        done = None
        if self._pending and timestamp != self._stamp:
            done = self._sample()
        if timestamp != self._stamp:
            self._stamp = timestamp
            self._seconds = None if timestamp is None else timestamp_seconds(timestamp)
        run = running or 0
        self._latest[dp] = _Latest(self._seconds, run, queue or 0, gen, usage, graph)
        self._pending = True
        tally = self.tallies.get(dp)
        if tally is None:
            tally = self.tallies[dp] = RankTally()
        tally.lines += 1
        tally.running_sum += run
        tally.running_max = max(tally.running_max, run)
        if gen is not None:
            tally.gen_sum += gen
            tally.gen_lines += 1
        return done

    def flush(self) -> NodeSample | None:
        return self._sample() if self._pending else None

    def _sample(self) -> NodeSample:
        self._pending = False
        now = self._seconds
        live = [v for v in self._latest.values()
                if now is None or v.seconds is None or now - v.seconds <= HOLD_S]
        gens = [v.gen for v in live if v.gen is not None]
        usages = [v.usage for v in live if v.usage is not None]
        graphs = [v.graph for v in live if v.graph is not None]
        return NodeSample(
            timestamp=self._stamp, ranks=len(live), running=sum(v.running for v in live),
            queue=sum(v.queue for v in live), gen_throughput=sum(gens) if gens else None,
            token_usage=max(usages) if usages else None,
            cuda_graph=None if not graphs else all(graphs))


@dataclass(frozen=True, slots=True)
class Imbalance:
    ranks: int
    busiest: str
    idlest: str
    running_mean_max: float
    running_mean_min: float
    running_max: int
    ratio: float | None
    """Mean #running-req of the busiest rank over the idlest's (None when the idlest ran 0)."""


def imbalance(tallies: dict[str, RankTally]) -> Imbalance | None:
    """Across DP ranks: whose mean #running-req is highest and lowest; None below 2 ranks."""
    ranks = {k: t for k, t in tallies.items() if k and t.lines}
    if len(ranks) < 2:
        return None
    busiest = max(ranks, key=lambda k: ranks[k].running_mean)
    idlest = min(ranks, key=lambda k: ranks[k].running_mean)
    high, low = ranks[busiest].running_mean, ranks[idlest].running_mean
    return Imbalance(
        ranks=len(ranks), busiest=busiest, idlest=idlest, running_mean_max=round(high, 2),
        running_mean_min=round(low, 2),
        running_max=max(t.running_max for t in ranks.values()),
        ratio=round(high / low, 2) if low > 0 else None)
