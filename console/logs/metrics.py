"""`/metrics` (with `--enable-metrics`) as a typed snapshot (console/logs/exposition.py reads it).

Names, labels and how a gauge is reduced across ranks are console/sglang/metrics_names.py's.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

from console.logs.exposition import samples
from console.sglang import metrics_names as mn
from console.sglang.metrics_names import (
    DP_LABEL,
    MAXED,
    RANK_LABELS,
    is_sglang,
    normalise_text,
)


@dataclass(frozen=True, slots=True)
class MetricsSnapshot:
    running_reqs: float | None = None
    queue_reqs: float | None = None
    gen_throughput: float | None = None
    token_usage: float | None = None
    cache_hit_rate: float | None = None
    cuda_graph: bool | None = None
    spec_accept_length: float | None = None
    retracted_reqs: float | None = None
    max_total_num_tokens: float | None = None
    context_len: float | None = None
    requests_total: float | None = None
    aborted_requests_total: float | None = None
    prompt_tokens_total: float | None = None
    generation_tokens_total: float | None = None
    values: dict[str, float] = field(default_factory=dict)
    """Every gauge and counter sample reduced as above, by sample name (e.g.
    `sglang:num_requests_total`); histogram `_sum`/`_count` included."""


def parse_metrics(text: str) -> MetricsSnapshot:
    """Parse a Prometheus text exposition (either name prefix, metrics_names.py); raises
    ValueError on malformed input (a kept line: see console/logs/exposition.py)."""
    # name -> (dp_rank, other labels) -> max over the remaining rank labels (TP/PP/EP).
    per_group: dict[str, dict[tuple[str, str], float]] = defaultdict(dict)
    for sample in samples(normalise_text(text), _kept):
        value = sample.value  # a huge integer is already +-inf: hostnum.py keeps it out
        if math.isnan(value):
            continue
        groups = per_group[sample.name]
        key = _group_key(sample.labels)
        previous = groups.get(key)
        groups[key] = value if previous is None else max(previous, value)
    values: dict[str, float] = {}
    for name, groups in per_group.items():
        by_dp: dict[str, float] = defaultdict(float)
        for (dp, _other), value in groups.items():
            by_dp[dp] += value  # e.g. is_streaming=true + is_streaming=false
        reduce = max if name in MAXED else sum
        values[name] = reduce(by_dp.values())
    graph = values.get(mn.IS_CUDA_GRAPH)
    return MetricsSnapshot(
        running_reqs=values.get(mn.NUM_RUNNING_REQS),
        queue_reqs=values.get(mn.NUM_QUEUE_REQS),
        gen_throughput=values.get(mn.GEN_THROUGHPUT),
        token_usage=values.get(mn.TOKEN_USAGE),
        cache_hit_rate=values.get(mn.CACHE_HIT_RATE),
        cuda_graph=None if graph is None else graph >= 0.5,
        spec_accept_length=values.get(mn.SPEC_ACCEPT_LENGTH),
        retracted_reqs=values.get(mn.NUM_RETRACTED_REQS),
        max_total_num_tokens=values.get(mn.MAX_TOTAL_NUM_TOKENS),
        context_len=values.get(mn.CONTEXT_LEN),
        requests_total=values.get(mn.NUM_REQUESTS_TOTAL),
        aborted_requests_total=values.get(mn.NUM_ABORTED_REQUESTS_TOTAL),
        prompt_tokens_total=values.get(mn.PROMPT_TOKENS_TOTAL),
        generation_tokens_total=values.get(mn.GENERATION_TOKENS_TOTAL),
        values=values,
    )


def _kept(name: str) -> bool:
    """SGLang's series without histogram buckets and `_created` (buckets are most of a page)."""
    return is_sglang(name) and not name.endswith(("_bucket", "_created"))


def _group_key(labels: dict[str, str]) -> tuple[str, str]:
    """(dp_rank, non-rank labels)."""
    other = ",".join(f"{k}={v}" for k, v in sorted(labels.items()) if k not in RANK_LABELS)
    return labels.get(DP_LABEL, ""), other
