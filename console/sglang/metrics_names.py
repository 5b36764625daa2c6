"""`/metrics` names (with `--enable-metrics`): both prefixes, the KV gauges, the rank labels.

* The raw page uses `sglang:` (a maintainer, sglang PR #21326, 2026-08); pipelines and
  dashboards rename it `sglang_` (llm-d PR #1970, smg-project/smg PR #813). Both are read.
* Scheduler series carry `model_name, engine_type, tp_rank, pp_rank, moe_ep_rank[, dp_rank]`
  (0.5.23 `srt/observability/metrics_collector.py`; docs/sglang.md §3.6). Per DP group the TP
  ranks report the same value: a gauge is reduced as max within a dp_rank, then summed across
  dp_ranks for counts and rates (SUMMED) or max across them for ratios (MAXED).
* KV pool breakdown gauges `kv_available_tokens`, `kv_evictable_tokens`, `kv_used_tokens`
  (PR #22726, v0.5.11).
"""

from __future__ import annotations

import re

PREFIX = "sglang:"
ALT_PREFIX = "sglang_"
# The series the rest of Plateau reads by name.
IS_CUDA_GRAPH = "sglang:is_cuda_graph"
NUM_RUNNING_REQS = "sglang:num_running_reqs"
NUM_QUEUE_REQS = "sglang:num_queue_reqs"
GEN_THROUGHPUT = "sglang:gen_throughput"
TOKEN_USAGE = "sglang:token_usage"
CACHE_HIT_RATE = "sglang:cache_hit_rate"
SPEC_ACCEPT_LENGTH = "sglang:spec_accept_length"
NUM_RETRACTED_REQS = "sglang:num_retracted_reqs"
MAX_TOTAL_NUM_TOKENS = "sglang:max_total_num_tokens"
CONTEXT_LEN = "sglang:context_len"
NUM_REQUESTS_TOTAL = "sglang:num_requests_total"
NUM_ABORTED_REQUESTS_TOTAL = "sglang:num_aborted_requests_total"
PROMPT_TOKENS_TOTAL = "sglang:prompt_tokens_total"
GENERATION_TOKENS_TOTAL = "sglang:generation_tokens_total"
NUM_RETRACTED_REQUESTS_TOTAL = "sglang:num_retracted_requests_total"
KV_USED_TOKENS = "sglang:kv_used_tokens"
CUDA_GRAPH_PASSES_TOTAL = "sglang:cuda_graph_passes_total"
SUMMED = frozenset({
    "sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:gen_throughput",
    "sglang:num_used_tokens", "sglang:num_retracted_reqs", "sglang:num_grammar_queue_reqs",
    "sglang:num_paused_reqs", "sglang:kv_available_tokens", "sglang:kv_evictable_tokens",
    "sglang:kv_used_tokens",
})
MAXED = frozenset({
    "sglang:token_usage", "sglang:cache_hit_rate", "sglang:is_cuda_graph",
    "sglang:spec_accept_length", "sglang:spec_accept_rate", "sglang:utilization",
    "sglang:max_total_num_tokens", "sglang:context_len",
})
KV_GAUGES = ("sglang:kv_available_tokens", "sglang:kv_evictable_tokens", "sglang:kv_used_tokens")
RANK_LABELS = frozenset({"tp_rank", "pp_rank", "moe_ep_rank", "dp_rank", "model_name",
                         "engine_type"})
DP_LABEL = "dp_rank"
_ALT_LINE = re.compile(r"(?m)^(# (?:HELP|TYPE) |)sglang_")


def normalise_name(name: str) -> str:
    """`sglang_num_running_reqs` -> `sglang:num_running_reqs`; other names unchanged."""
    if name.startswith(ALT_PREFIX):
        return PREFIX + name[len(ALT_PREFIX):]
    return name


def normalise_text(text: str) -> str:
    """A whole exposition page with every `sglang_` series (and its HELP/TYPE) renamed to
    `sglang:`, so one reader serves both."""
    if ALT_PREFIX not in text:
        return text
    return _ALT_LINE.sub(r"\1sglang:", text)


def is_sglang(name: str) -> bool:
    return name.startswith(PREFIX)
