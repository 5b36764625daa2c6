"""Metrics arithmetic and post-hoc SSE parsing, on hand-made streams."""

from __future__ import annotations

import json

import pytest

from console.bench.metrics import Chunks, RequestRecord, percentile, step_metrics
from console.bench.sse import parse_stream, split_events

MS = 1_000_000


def _sse(*events: object) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + (
        b"data: [DONE]\n\n"
    )


def test_percentile_matches_numpy_linear() -> None:
    values = [1.0, 2.0, 3.0, 4.0, 10.0]
    assert percentile(values, 50) == 3.0
    assert percentile(values, 90) == pytest.approx(7.6)
    assert percentile(values, 99) == pytest.approx(9.76)


def test_events_split_across_chunks_take_the_completing_chunk_time() -> None:
    raw = [(100, b'data: {"a"'), (200, b": 1}\n"), (300, b'\ndata: {"b": 2}\n\n')]
    assert list(split_events(raw)) == [(300, b'{"a": 1}'), (300, b'{"b": 2}')]


def _generate_stream(tokens_per_chunk: list[int]) -> list[tuple[int, bytes]]:
    raw, total, t = [], 0, 20 * MS
    for i, n in enumerate(tokens_per_chunk):
        total += n
        last = i == len(tokens_per_chunk) - 1
        event = {
            "text": "x" * total,
            "output_ids": list(range(total)),
            "meta_info": {
                "prompt_tokens": 64,
                "completion_tokens": total,
                "finish_reason": {"type": "length", "length": total} if last else None,
            },
        }
        raw.append((t, _sse(event) if last else _sse(event)[: -len(b"data: [DONE]\n\n")]))
        t += 10 * MS * n
    return raw


def test_generate_stream_uses_server_token_counts_and_splits_multi_token_chunks() -> None:
    record = RequestRecord(start_ns=0, requested_output=5)
    parse_stream("generate", _generate_stream([1, 2, 1, 1]), record)
    record.end_ns = 60 * MS
    assert record.error is None
    assert record.output_tokens == 5 and record.prompt_tokens == 64
    assert record.chunks == [(20 * MS, 1), (30 * MS, 2), (50 * MS, 1), (60 * MS, 1)]
    metrics = step_metrics([record], 1)
    assert metrics.ttft_ms.p50 == pytest.approx(20.0)
    # gaps: 10 ms for 2 tokens -> two 5 ms samples; then 20 ms and 10 ms single tokens
    assert metrics.itl_ms.count == 4
    assert metrics.itl_ms.mean == pytest.approx((5 + 5 + 20 + 10) / 4)
    assert metrics.tpot_ms.p50 == pytest.approx((60 - 20) / 4)
    assert metrics.output_len_mismatches == 0


def test_chat_stream_skips_the_role_chunk_and_reads_usage() -> None:
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}], "usage": None},
        {"choices": [{"index": 0, "delta": {"content": " a"}}], "usage": None},
        {"choices": [{"index": 0, "delta": {"content": " b"}, "finish_reason": "length"}]},
        {"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 2}},
    ]
    raw = [(i * MS, _sse(c)[: -len(b"data: [DONE]\n\n")]) for i, c in enumerate(chunks)]
    raw.append((9 * MS, b"data: [DONE]\n\n"))
    record = parse_stream("chat", raw, RequestRecord(start_ns=0, requested_output=2))
    assert record.error is None
    assert record.chunks == [(1 * MS, 1), (2 * MS, 1)]
    assert (record.prompt_tokens, record.output_tokens) == (12, 2)


def test_error_inside_a_200_stream_is_an_error_not_a_success() -> None:
    raw = [(MS, _sse({"error": {"message": "KV cache full", "code": 503}}))]
    record = parse_stream("completions", raw, RequestRecord(start_ns=0))
    assert record.error == "KV cache full"
    metrics = step_metrics([record], 1)
    assert metrics.errors == 1 and metrics.completed == 0
    assert metrics.ttft_ms.p50 is None  # never averaged over failed requests


def test_stream_without_finish_is_an_error() -> None:
    raw = _generate_stream([1, 1, 1])[:2]
    record = parse_stream("generate", raw, RequestRecord(start_ns=0))
    assert record.error == "stream ended without a finish reason"


def test_throughput_labels_and_littles_law() -> None:
    records = []
    for i in range(4):  # four 100 ms requests, two at a time, over 200 ms
        start = (i // 2) * 100 * MS
        r = RequestRecord(start_ns=start, end_ns=start + 100 * MS, prompt_tokens=30,
                          output_tokens=10, requested_output=10)  # fmt: skip
        r.chunks = Chunks([(start + 10 * MS + k * 10 * MS, 1) for k in range(10)])
        records.append(r)
    m = step_metrics(records, 2)
    assert m.duration_s == pytest.approx(0.2)
    assert m.output_tok_s == pytest.approx(40 / 0.2)
    assert m.input_tok_s == pytest.approx(120 / 0.2)
    assert m.total_tok_s == pytest.approx(160 / 0.2)
    assert m.request_per_s == pytest.approx(20)
    assert m.measured_concurrency == pytest.approx(2.0)


def test_time_box_counts_tokens_of_cut_off_requests_inside_the_window() -> None:
    done = RequestRecord(start_ns=0, end_ns=50 * MS, prompt_tokens=8, output_tokens=5,
                         chunks=Chunks([(k * 10 * MS, 1) for k in range(1, 6)]))  # fmt: skip
    cut = RequestRecord(start_ns=0, end_ns=100 * MS, prompt_tokens=8, incomplete=True,
                        chunks=Chunks([(k * 10 * MS, 1) for k in range(1, 20)]))  # fmt: skip
    m = step_metrics([done, cut], 2, window=(0, 100 * MS))
    assert (m.completed, m.incomplete, m.errors) == (1, 1, 0)
    assert m.output_tokens == 5 + 10  # only the cut request's tokens inside the window
    assert m.e2e_ms.count == 1


def test_client_warning_thresholds() -> None:
    from console.bench.engines import client_warning

    assert client_warning(0.3, 2.0) is None
    warning = client_warning(0.9, 35.0)
    assert warning is not None and "90% CPU" in warning and "lag p99 35 ms" in warning
