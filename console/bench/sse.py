"""Turning raw stream bytes (stamped on arrival) into a RequestRecord, after the fact.

The hot loop only appends `(perf_counter_ns(), bytes)`; splitting events and parsing JSON
happens here, once the stream has ended (or was cut off), so parsing never delays a stamp.
An event's time is the arrival time of the chunk that completed it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from console.bench.metrics import RequestRecord

try:  # orjson is faster; the stdlib is fine when it is absent
    import orjson

    _loads = orjson.loads
except ImportError:  # pragma: no cover - depends on the environment
    _loads = json.loads


def split_events(raw: Sequence[tuple[int, bytes]]) -> Iterator[tuple[int, bytes]]:
    """Yield (arrival ns, payload after `data:`) for each complete SSE event."""
    buffer = b""
    for t_ns, data in raw:
        buffer += data.replace(b"\r\n", b"\n")
        while True:
            cut = buffer.find(b"\n\n")
            if cut < 0:
                break
            event, buffer = buffer[:cut], buffer[cut + 2 :]
            payload = b"\n".join(
                line[5:].lstrip() for line in event.split(b"\n") if line.startswith(b"data:")
            )
            if payload:
                yield t_ns, payload


def _error_text(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("message") or value)[:300]
    return str(value)[:300]


def parse_stream(
    endpoint: str, raw: Sequence[tuple[int, bytes]], record: RequestRecord
) -> RequestRecord:
    """Fill `record.chunks`, token counts and errors from the raw stream."""
    prev_server = 0  # cumulative completion tokens reported so far
    saw_finish = False
    for t_ns, payload in split_events(raw):
        if payload == b"[DONE]":
            continue
        try:
            event = _loads(payload)
        except ValueError:
            record.error = f"unparseable event: {payload[:80]!r}"
            continue
        if not isinstance(event, dict):
            continue
        if "error" in event:
            record.error = _error_text(event["error"])
            continue
        if endpoint == "generate":
            meta = event.get("meta_info") or {}
            total = int(meta.get("completion_tokens") or 0)
            new = total - prev_server
            if new > 0:
                record.chunks.append((t_ns, new))
                prev_server = total
            record.output_tokens = max(record.output_tokens, total)
            record.prompt_tokens = int(meta.get("prompt_tokens") or record.prompt_tokens)
            record.client_tokens = len(event.get("output_ids") or ()) or record.client_tokens
            finish = meta.get("finish_reason")
            if isinstance(finish, dict):
                saw_finish = True
                if finish.get("type") == "abort":
                    record.error = f"aborted: {finish.get('message', '')}"[:300]
            continue
        usage = event.get("usage") or None
        choices = event.get("choices") or []
        text = ""
        for choice in choices:
            if endpoint == "chat":
                text += (choice.get("delta") or {}).get("content") or ""
            else:
                text += choice.get("text") or ""
            if choice.get("finish_reason"):
                saw_finish = True
                if choice["finish_reason"] == "abort":
                    record.error = "aborted by the server"
        if text:
            record.client_tokens += 1
            if usage and usage.get("completion_tokens") is not None:
                new = int(usage["completion_tokens"]) - prev_server
                prev_server = int(usage["completion_tokens"])
                record.chunks.append((t_ns, max(new, 1)))
            else:
                prev_server += 1
                record.chunks.append((t_ns, 1))
        if usage:
            record.prompt_tokens = int(usage.get("prompt_tokens") or record.prompt_tokens)
            if usage.get("completion_tokens") is not None:
                record.output_tokens = int(usage["completion_tokens"])
    if not record.output_tokens:
        # No usage from the server: fall back to the client count (flagged by mismatches).
        record.output_tokens = sum(n for _, n in record.chunks)
    if record.error is None and not record.incomplete and not saw_finish:
        record.error = "stream ended without a finish reason"
    return record
