"""A load worker keeps per request only what the metrics need (issue 19 item 2): arrival
times and token counts as compact arrays, never the stream's text, whatever its length."""

from __future__ import annotations

import dataclasses
import json
import pickle
import sys

from console.bench.metrics import Chunks, RequestRecord
from console.bench.worker import _Request

MS = 1_000_000


def _retained_bytes(req: _Request) -> int:
    """What one request holds once its stream is over: the record's arrays and the
    parser's buffer (the rest is a fixed number of small ints)."""
    chunks = req.record.chunks
    return sys.getsizeof(chunks.times) + sys.getsizeof(chunks.tokens) + len(req.parser.buffer)


def _generate_stream(tokens: int, text_per_token: int) -> list[bytes]:
    """SGLang /generate style: every event repeats the whole text so far (cumulative)."""
    out = []
    for n in range(1, tokens + 1):
        event = {"text": "y" * (n * text_per_token), "output_ids": list(range(n)),
                 "meta_info": {"prompt_tokens": 8, "completion_tokens": n,
                               "finish_reason": {"type": "length"} if n == tokens else None}}
        out.append(b"data: " + json.dumps(event).encode() + b"\n\n")
    out.append(b"data: [DONE]\n\n")
    return out


def _run(tokens: int, text_per_token: int) -> _Request:
    req = _Request(0, tokens, "generate")
    for i, event in enumerate(_generate_stream(tokens, text_per_token)):
        half = len(event) // 2  # events split across chunks, as TCP delivers them
        req.parser.feed(i * MS, event[:half])
        req.parser.feed(i * MS + 1, event[half:])
    req.parser.finish()
    return req


def test_record_has_no_stream_payload_fields() -> None:
    kinds = {f.name: f.type for f in dataclasses.fields(RequestRecord)}
    assert not any("bytes" in str(t) for t in kinds.values())
    assert [name for name, t in kinds.items() if "str" in str(t)] == ["error"]
    assert _Request.__slots__ == ("parser", "record")
    assert isinstance(RequestRecord(start_ns=0).chunks, Chunks)


def test_retained_size_does_not_depend_on_stream_text() -> None:
    short, long = _run(200, 1), _run(200, 100)
    assert short.record.output_tokens == long.record.output_tokens == 200
    assert short.record.error is None and long.record.error is None
    assert long.parser.buffer == b""
    # 100x the text (a ~2 MB stream) keeps exactly as much as the short one ...
    assert _retained_bytes(long) == _retained_bytes(short)
    # ... which is 16 bytes per chunk plus the arrays' fixed headers.
    assert _retained_bytes(long) < 200 * 16 + 1024
    assert list(long.record.chunks)[:2] == [(1, 1), (MS + 1, 1)]


def test_chunks_cross_processes_compactly() -> None:
    pairs = [(k * MS, 1) for k in range(1, 1001)]
    # a plain list on purpose: __post_init__ packs it into Chunks, which is what crosses over
    record = RequestRecord(start_ns=0, chunks=pairs)  # type: ignore[arg-type]
    again = RequestRecord.from_tuple(pickle.loads(pickle.dumps(record.to_tuple())))
    assert again.chunks == record.chunks and again.ttft_ns == MS
    assert len(pickle.dumps(record.chunks)) < 1000 * 16 + 200
