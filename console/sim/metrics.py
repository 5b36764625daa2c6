"""`/metrics` in Prometheus text format with SGLang's real `sglang:` names (docs/sglang.md §3.6, B).

Only mounted with --enable-metrics. Gauges are refreshed from the engine at scrape time;
latency histograms are fed from samples the engine records while metrics are enabled.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from console.sim.engine import current_gen_throughput

if TYPE_CHECKING:
    from console.sim.server import SimState

TTFT_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400)
ITL_BUCKETS = (0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040,
               0.060, 0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.0, 2.0, 4.0, 6.0, 8.0)
E2E_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400, 600,
               1200, 1800, 2400)


class Metrics:
    def __init__(self, model_name: str, tp: int) -> None:
        reg = self.registry = CollectorRegistry(auto_describe=True)
        sched = ["model_name", "engine_type", "tp_rank", "pp_rank", "moe_ep_rank"]
        self.sched_labels = {"model_name": model_name, "engine_type": "unified", "tp_rank": "0",
                             "pp_rank": "0", "moe_ep_rank": "0"}
        self.tok_labels = {"model_name": model_name, "engine_type": "unified"}
        tok = ["model_name", "engine_type"]

        def g(name: str, doc: str, labels: list[str] = sched) -> Gauge:
            return Gauge(f"sglang:{name}", doc, labels, registry=reg)

        self.gauges: dict[str, Gauge] = {
            "num_running_reqs": g("num_running_reqs", "The number of running requests."),
            "num_queue_reqs": g("num_queue_reqs", "The number of requests in the waiting queue."),
            "num_grammar_queue_reqs": g("num_grammar_queue_reqs",
                                        "The number of requests in the grammar waiting queue."),
            "gen_throughput": g("gen_throughput", "The generation throughput (token/s)."),
            "cache_hit_rate": g("cache_hit_rate", "The prefix cache hit rate."),
            "token_usage": g("token_usage", "The token usage."),
            "full_token_usage": g("full_token_usage",
                                  "The token usage for full attention layers."),
            "num_used_tokens": g("num_used_tokens", "The number of used tokens."),
            "kv_used_tokens": g("kv_used_tokens", "KV tokens in use."),
            "kv_available_tokens": g("kv_available_tokens", "KV tokens available."),
            "num_retracted_reqs": g("num_retracted_reqs", "The number of retracted requests."),
            "num_paused_reqs": g("num_paused_reqs", "The number of paused requests."),
            "utilization": g("utilization", "The utilization."),
            "new_token_ratio": g("new_token_ratio", "The new token ratio."),
            "is_cuda_graph": g("is_cuda_graph", "Whether the batch is using CUDA graph."),
            "max_total_num_tokens": g("max_total_num_tokens",
                                      "Maximum total number of tokens in the KV cache pool."),
            "weight_memory_usage_gb": g("weight_memory_usage_gb",
                                        "Memory used by model weights in GB."),
            "kv_cache_memory_usage_gb": g("kv_cache_memory_usage_gb",
                                          "Memory used by the KV cache pools in GB."),
            "graph_memory_usage_gb": g("graph_memory_usage_gb",
                                       "Memory used by captured device graphs in GB."),
            "page_size": g("page_size", "KV cache page size in tokens."),
            "context_len": g("context_len", "Maximum context length."),
        }
        self.startup = Gauge("sglang:startup_time_seconds",
                             "Engine startup duration by phase in seconds.", [*tok, "phase"],
                             registry=reg)
        self.retracted_total = Counter("sglang:num_retracted_requests", "Retracted requests.",
                                       sched, registry=reg)
        self.cuda_graph_passes = Counter("sglang:cuda_graph_passes",
                                         "Forward passes that used a CUDA graph.", sched,
                                         registry=reg)
        stream = [*tok, "is_streaming"]
        self.prompt_tokens = Counter("sglang:prompt_tokens", "Number of prefill tokens processed.",
                                     stream, registry=reg)
        self.generation_tokens = Counter("sglang:generation_tokens",
                                         "Number of generation tokens processed.", stream,
                                         registry=reg)
        self.num_requests = Counter("sglang:num_requests", "Number of requests processed.",
                                    stream, registry=reg)
        self.aborted = Counter("sglang:num_aborted_requests", "Number of requests aborted.", tok,
                               registry=reg)
        self.ttft = Histogram("sglang:time_to_first_token_seconds",
                              "Histogram of time to first token in seconds.", stream,
                              buckets=TTFT_BUCKETS, registry=reg)
        self.itl = Histogram("sglang:inter_token_latency_seconds",
                             "Histogram of inter-token latency in seconds.", tok,
                             buckets=ITL_BUCKETS, registry=reg)
        self.e2e = Histogram("sglang:e2e_request_latency_seconds",
                             "Histogram of End-to-end request latency in seconds", stream,
                             buckets=E2E_BUCKETS, registry=reg)
        self.http_requests = Counter("sglang:http_requests",
                                     "Total number of HTTP requests by endpoint and method",
                                     ["endpoint", "method"], registry=reg)
        self.http_responses = Counter("sglang:http_responses",
                                      "Total number of HTTP responses by endpoint and status "
                                      "code", ["endpoint", "status_code"], registry=reg)
        self._last: dict[str, float] = {}

    def http_request(self, path: str, method: str) -> None:
        self.http_requests.labels(endpoint=path, method=method).inc()

    def http_response(self, path: str, status: int) -> None:
        self.http_responses.labels(endpoint=path, status_code=str(status)).inc()

    def _delta(self, key: str, value: float) -> float:
        previous = self._last.get(key, 0.0)
        self._last[key] = value
        return max(0.0, value - previous)

    def render(self, state: SimState) -> bytes:
        engine = state.engine
        stats = engine.stats
        profile = state.cfg.profile
        cap = max(1, engine.capacity)
        values: dict[str, Any] = {
            "num_running_reqs": len(engine.running),
            "num_queue_reqs": len(engine.waiting),
            "num_grammar_queue_reqs": 0,
            "gen_throughput": current_gen_throughput(stats, time.monotonic()),
            "cache_hit_rate": 0.0,
            "token_usage": round(engine.kv_used / cap, 2),
            "full_token_usage": round(engine.kv_used / cap, 2),
            "num_used_tokens": engine.kv_used,
            "kv_used_tokens": engine.kv_used,
            "kv_available_tokens": cap - engine.kv_used,
            "num_retracted_reqs": 0,
            "num_paused_reqs": 0,
            "utilization": round(engine.kv_used / cap, 4),
            "new_token_ratio": getattr(engine, "new_token_ratio", 0.0),
            "is_cuda_graph": 1.0 if profile.uses_graph(max(1, len(engine.running))) else 0.0,
            "max_total_num_tokens": profile.max_total_num_tokens,
            "weight_memory_usage_gb": round(profile.weight_gb_per_gpu, 2),
            "kv_cache_memory_usage_gb": round(max(0.0, profile.kv_pool_gb), 2),
            "graph_memory_usage_gb": round(profile.graph_gb, 2),
            "page_size": int(state.cfg.server_args.get("page_size") or 1),
            "context_len": state.cfg.context_len,
        }
        for key, value in values.items():
            self.gauges[key].labels(**self.sched_labels).set(float(value))
        for phase, seconds in state.startup_time.items():
            if isinstance(seconds, int | float):
                self.startup.labels(**self.tok_labels, phase=phase).set(seconds)
        streaming = {**self.tok_labels, "is_streaming": "true"}
        self.prompt_tokens.labels(**streaming).inc(
            self._delta("prompt", stats.prompt_tokens_total))
        self.generation_tokens.labels(**streaming).inc(
            self._delta("gen", stats.generation_tokens_total))
        self.num_requests.labels(**streaming).inc(self._delta("req", stats.num_requests_total))
        self.aborted.labels(**self.tok_labels).inc(self._delta("abort", stats.num_aborted_total))
        self.retracted_total.labels(**self.sched_labels).inc(
            self._delta("retract", stats.num_retracted_total))
        self.cuda_graph_passes.labels(**self.sched_labels).inc(
            self._delta("graph", stats.cuda_graph_passes))
        ttft = self.ttft.labels(**streaming)
        for value in stats.ttft:
            ttft.observe(value)
        itl = self.itl.labels(**self.tok_labels)
        for value in stats.itl:
            itl.observe(value)
        e2e = self.e2e.labels(**streaming)
        for value in stats.e2e:
            e2e.observe(value)
        stats.ttft.clear()
        stats.itl.clear()
        stats.e2e.clear()
        return generate_latest(self.registry)
