"""Batch lines as typed stats, the rolling aggregator, and /metrics parsing."""

from __future__ import annotations

import pytest

from console.logs.assembler import parse_lines
from console.logs.batch_stats import parse_batch_message
from console.logs.metrics import parse_metrics
from console.logs.server_stats import StatsAggregator
from tests.support.logs_fixtures import sample_events


def test_prefill_line() -> None:
    stats = parse_batch_message(
        "Prefill batch, #new-seq: 4, #new-token: 4096, #cached-token: 0, token usage: 0.01, "
        "#running-req: 12, #queue-req: 3, #pending-token: 1024, cuda graph: True, "
        "input throughput (token/s): 31544.71", timestamp="t", ranks="TP0")
    assert stats is not None and stats.kind == "prefill"
    assert (stats.new_seq, stats.new_token, stats.cached_token) == (4, 4096, 0)
    assert (stats.running_reqs, stats.queue_reqs, stats.pending_token) == (12, 3, 1024)
    assert stats.token_usage == 0.01 and stats.cuda_graph is True
    assert stats.input_throughput == 31544.71 and stats.ranks == "TP0"


def test_decode_line_with_spec_and_iter_and_mfu() -> None:
    stats = parse_batch_message(
        "Decode batch [1234], #running-req: 32, #token: 40960, token usage: 0.05, "
        "accept len: 2.87, accept rate: 0.62, cuda graph: False, gen throughput (token/s): "
        "2876.12, #queue-req: 7, est. decode TFLOPS/s (per GPU): 12.5")
    assert stats is not None and stats.kind == "decode" and stats.forward_iter == 1234
    assert (stats.running_reqs, stats.num_tokens, stats.queue_reqs) == (32, 40960, 7)
    assert (stats.accept_len, stats.accept_rate) == (2.87, 0.62)
    assert stats.cuda_graph is False and stats.gen_throughput == 2876.12
    assert stats.fields["est. decode TFLOPS/s (per GPU)"] == "12.5"


def test_old_dot_variant_and_hybrid_pools() -> None:
    old = parse_batch_message("Decode batch. #running-req: 1, #token: 20, token usage: 0.00, "
                              "gen throughput (token/s): 5.71, #queue-req: 0")
    assert old is not None and old.running_reqs == 1 and old.gen_throughput == 5.71
    assert old.cuda_graph is None
    swa = parse_batch_message("Decode batch, #running-req: 3, #full token: 10, full token usage:"
                              " 0.30, #swa token: 5, swa token usage: 0.70, npu graph: True, "
                              "gen throughput (token/s): 1.00, #queue-req: 0")
    assert swa is not None and swa.token_usage == 0.70 and swa.num_tokens == 10
    assert swa.cuda_graph is True
    assert parse_batch_message("Decode batched nothing") is None


def test_aggregator_histories_and_retractions() -> None:
    aggregator = StatsAggregator(history=5)
    used = aggregator.add_events(sample_events())
    assert used == 30
    stats = aggregator.snapshot()
    assert stats.source == "log"
    assert len(stats.gen_history) == 5 and stats.gen_history[-1] == pytest.approx(2946.12)
    assert stats.retractions == 1
    assert stats.accept_len == pytest.approx(2.52)
    assert aggregator.snapshot() is stats  # unchanged: same object, same version
    aggregator.add_events(parse_lines(["[2026-02-19 05:25:03 TP0] Decode batch, #running-req: 9,"
                                       " #token: 1, token usage: 0.50, cuda graph: False, gen "
                                       "throughput (token/s): 10.00, #queue-req: 4"]))
    newer = aggregator.snapshot()
    assert newer.version > stats.version
    assert (newer.running_reqs, newer.queue_reqs, newer.cuda_graph) == (9, 4, False)


METRICS = """\
# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{dp_rank="0",engine_type="unified",model_name="m",tp_rank="0"} 10.0
sglang:num_running_reqs{dp_rank="0",engine_type="unified",model_name="m",tp_rank="1"} 10.0
sglang:num_running_reqs{dp_rank="1",engine_type="unified",model_name="m",tp_rank="2"} 6.0
# HELP sglang:token_usage The token usage.
# TYPE sglang:token_usage gauge
sglang:token_usage{dp_rank="0",engine_type="unified",model_name="m",tp_rank="0"} 0.25
sglang:token_usage{dp_rank="1",engine_type="unified",model_name="m",tp_rank="2"} 0.75
# HELP sglang:gen_throughput The generation throughput (token/s).
# TYPE sglang:gen_throughput gauge
sglang:gen_throughput{engine_type="unified",model_name="m",tp_rank="0"} 5321.5
# HELP sglang:is_cuda_graph Whether the batch is using CUDA graph.
# TYPE sglang:is_cuda_graph gauge
sglang:is_cuda_graph{engine_type="unified",model_name="m",tp_rank="0"} 1.0
# HELP sglang:num_requests_total Number of requests processed.
# TYPE sglang:num_requests_total counter
sglang:num_requests_total{engine_type="unified",is_streaming="true",model_name="m"} 7.0
sglang:num_requests_total{engine_type="unified",is_streaming="false",model_name="m"} 3.0
# HELP sglang:e2e_request_latency_seconds Histogram of End-to-end request latency in seconds
# TYPE sglang:e2e_request_latency_seconds histogram
sglang:e2e_request_latency_seconds_bucket{le="0.1",model_name="m"} 1.0
sglang:e2e_request_latency_seconds_bucket{le="+Inf",model_name="m"} 4.0
sglang:e2e_request_latency_seconds_count{model_name="m"} 4.0
sglang:e2e_request_latency_seconds_sum{model_name="m"} 2.5
# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 1.5
"""


def test_metrics_snapshot_reduces_ranks() -> None:
    snap = parse_metrics(METRICS)
    assert snap.running_reqs == 16.0  # max over TP within a DP rank, summed over DP ranks
    assert snap.token_usage == 0.75  # usages take the max over DP ranks
    assert snap.gen_throughput == 5321.5 and snap.cuda_graph is True
    assert snap.requests_total == 10.0  # is_streaming true + false
    assert snap.values["sglang:e2e_request_latency_seconds_count"] == 4.0
    assert "process_cpu_seconds_total" not in snap.values
    aggregator = StatsAggregator()
    aggregator.add_metrics(snap)
    stats = aggregator.snapshot()
    assert stats.source == "metrics" and stats.running_history == (16.0,)


def test_metrics_malformed_raises() -> None:
    with pytest.raises(ValueError):
        parse_metrics("sglang:num_running_reqs{ 1\n")


def test_buckets_and_other_exporters_never_change_the_snapshot() -> None:
    """Histogram buckets and foreign series are dropped before parsing (most of a page's
    cost): the snapshot is the one their absence gives, and a malformed kept line raises."""
    lines = METRICS.splitlines()
    bare = "\n".join(line for line in lines
                     if "_bucket" not in line and "process_cpu" not in line) + "\n"
    assert any("_bucket" in line for line in lines)
    assert parse_metrics(METRICS) == parse_metrics(bare)
    with pytest.raises(ValueError):
        parse_metrics(METRICS + 'sglang:num_queue_reqs{dp_rank="0" 3\n')
