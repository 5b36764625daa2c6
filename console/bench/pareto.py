"""Interactivity against efficiency: per-user output tok/s vs total tok/s per GPU, one point per
concurrency level, and the Pareto frontier over any set of such points (several runs).

Per-user tok/s is the median request's decode rate, 1000 / its TPOT in ms: what one user
watches their stream arrive at. That is AIPerf's "Output Token Throughput Per User" (per
request, 1 / inter-token latency; docs.nvidia.com/aiperf, Metrics Reference) and what
`vllm bench sweep plot_pareto` puts on its tokens/s/user axis. Output tok/s / concurrency
is not used: it charges each user for queueing, TTFT and the client's turnaround between
requests, so it falls with concurrency even where every stream decodes as fast as before.
The median, not the mean, so one stalled request does not move the point (and median(1000/t)
is 1000/median(t), so it is read straight off the stored TPOT p50, for every stored run and
for bench_serving steps alike).

Per-GPU tok/s is the step's headline total tok/s (its steady window's when it had one) over
the GPUs serving the model.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from console.bench.gpus import serving_gpus
from console.bench.models import StepResult


@dataclass(frozen=True)
class ParetoPoint:
    concurrency: int
    per_user_tok_s: float  # median request's decode rate (output tok/s it sees)
    per_gpu_tok_s: float  # total tok/s / GPUs
    run_id: int | None = None
    label: str = ""

    def dominates(self, other: ParetoPoint) -> bool:
        return (
            self.per_user_tok_s >= other.per_user_tok_s
            and self.per_gpu_tok_s >= other.per_gpu_tok_s
            and (self.per_user_tok_s > other.per_user_tok_s
                 or self.per_gpu_tok_s > other.per_gpu_tok_s)
        )


def gpus_serving(server_info: Mapping[str, Any] | None) -> int:
    """GPUs behind the server from /server_info (console/bench/gpus.py); 1 when it did not
    say."""
    return serving_gpus(server_info).count


def run_gpus(steps: Sequence[StepResult], server_info: Mapping[str, Any] | None = None) -> int:
    """GPUs serving a run: the one figure per-GPU tok/s divides by, in `sweep --json`,
    `export`, the report and the chart alike. What its steps recorded when they ran
    (console/bench/gpus.py, kept by the sweep runner), else what the run's stored
    /server_info says (steps stored before they kept it)."""
    counts = [s.gpus for s in steps if s.gpus]
    return max(counts) if counts else gpus_serving(server_info)


def pareto_points(steps: Sequence[StepResult], *, gpus: int = 1, run_id: int | None = None,
                  label: str = "") -> list[ParetoPoint]:
    """One point per concurrency (repeats averaged), ok steps with a TPOT only."""
    grouped: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for step in steps:
        m = step.metrics
        if step.status != "ok" or m is None or not m.tpot_ms.p50 or m.tpot_ms.p50 <= 0:
            continue
        grouped[step.concurrency].append(
            (1000.0 / m.tpot_ms.p50, m.headline_total_tok_s() / max(1, gpus))
        )
    return [
        ParetoPoint(c, sum(u for u, _ in rows) / len(rows), sum(g for _, g in rows) / len(rows),
                    run_id, label)
        for c, rows in sorted(grouped.items())
    ]


def frontier(points: Iterable[ParetoPoint]) -> list[ParetoPoint]:
    """The points no other point beats on both axes, by per-user tok/s ascending."""
    pool = list(points)
    kept = [p for p in pool if not any(q.dominates(p) for q in pool)]
    return sorted(kept, key=lambda p: (p.per_user_tok_s, -p.per_gpu_tok_s))


def pareto_json(points: Sequence[ParetoPoint]) -> dict[str, Any]:
    """`{"points": [...], "frontier": [concurrency...]}` for `sweep --json` and `export`."""
    front = frontier(points)
    return {
        "x": "per-user output tok/s (median request's decode rate, 1000 / TPOT p50)",
        "y": "total tok/s per GPU",
        "points": [asdict(p) for p in points],
        "frontier": [
            {"run_id": p.run_id, "concurrency": p.concurrency} for p in front
        ],
    }
