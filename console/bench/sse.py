"""Turning stream bytes (stamped on arrival) into a RequestRecord, as they arrive.

The hot loop stamps each chunk with `perf_counter_ns()` first and only then feeds it to a
`StreamParser`, so a chunk's own parsing never delays its stamp. The parser keeps only the
incomplete tail of the current event: no stream text is retained, so a worker's memory per
request is the record's compact arrays, whatever the output length.
An event's time is the arrival time of the chunk that completed it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from console.bench.metrics import RequestRecord

_loads: Callable[[bytes], Any]
try:  # orjson is faster; the stdlib is fine when it is absent
    import orjson

    _loads = orjson.loads
except ImportError:  # pragma: no cover - depends on the environment
    _loads = json.loads


def _take_events(buffer: bytes) -> tuple[list[bytes], bytes]:
    """Complete SSE events' `data:` payloads in `buffer`, and the incomplete rest."""
    payloads: list[bytes] = []
    while True:
        cut = buffer.find(b"\n\n")
        if cut < 0:
            return payloads, buffer
        event, buffer = buffer[:cut], buffer[cut + 2 :]
        if event.startswith(b"data: ") and b"\n" not in event:
            payload = event[6:].lstrip()  # the usual one-line event, without the split
        else:
            payload = b"\n".join(
                line[5:].lstrip() for line in event.split(b"\n") if line.startswith(b"data:")
            )
        if payload:
            payloads.append(payload)


def _append(buffer: bytes, data: bytes) -> bytes:
    buffer += data
    # On the joined buffer, so a CR LF split across two chunks is normalised too.
    return buffer.replace(b"\r\n", b"\n") if b"\r" in data else buffer


def split_events(raw: Iterable[tuple[int, bytes]]) -> Iterator[tuple[int, bytes]]:
    """Yield (arrival ns, payload after `data:`) for each complete SSE event."""
    buffer = b""
    for t_ns, data in raw:
        payloads, buffer = _take_events(_append(buffer, data))
        for payload in payloads:
            yield t_ns, payload


def _error_text(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("message") or value)[:300]
    return str(value)[:300]


class StreamParser:
    """Feeds one request's stream into its record, event by event, keeping no text (but the
    answer, when a multi-turn conversation needs it for its next turn)."""

    __slots__ = ("answer", "buffer", "endpoint", "prev_server", "record", "saw_finish")

    def __init__(self, endpoint: str, record: RequestRecord, keep_answer: bool = False) -> None:
        self.endpoint = endpoint
        # The answer, kept only for a multi-turn workload's next turn: token ids (/generate)
        # or text pieces (OpenAI endpoints).
        self.answer: list[Any] | None = [] if keep_answer else None
        self.record = record
        self.buffer = b""  # the incomplete tail of the current event, nothing more
        self.prev_server = 0  # cumulative completion tokens reported so far
        self.saw_finish = False

    def feed(self, t_ns: int, data: bytes) -> None:
        payloads, self.buffer = _take_events(_append(self.buffer, data))
        for payload in payloads:
            self._event(t_ns, payload)

    def finish(self) -> RequestRecord:
        """Close the stream: fallbacks and the missing-finish check. Returns the record."""
        record = self.record
        self.buffer = b""
        if not record.output_tokens:
            # No usage from the server: fall back to the client count (flagged by mismatches).
            record.output_tokens = sum(n for _, n in record.chunks)
        if record.error is None and not record.incomplete and not self.saw_finish:
            record.error = "stream ended without a finish reason"
        return record

    def _event(self, t_ns: int, payload: bytes) -> None:
        if payload == b"[DONE]":
            return
        record = self.record
        try:
            event = _loads(payload)
        except ValueError:
            record.error = f"unparseable event: {payload[:80]!r}"
            return
        if not isinstance(event, dict):
            return
        if "error" in event:
            record.error = _error_text(event["error"])
            return
        if self.endpoint == "generate":
            self._generate_event(t_ns, event)
        else:
            self._openai_event(t_ns, event)

    def _generate_event(self, t_ns: int, event: dict[str, Any]) -> None:
        record = self.record
        meta = event.get("meta_info") or {}
        total = int(meta.get("completion_tokens") or 0)
        new = total - self.prev_server
        if new > 0:
            record.chunks.append((t_ns, new))
            self.prev_server = total
        record.output_tokens = max(record.output_tokens, total)
        record.prompt_tokens = int(meta.get("prompt_tokens") or record.prompt_tokens)
        record.cached_tokens = int(meta.get("cached_tokens") or record.cached_tokens)
        ids = event.get("output_ids") or ()
        record.client_tokens = len(ids) or record.client_tokens
        if self.answer is not None and ids:
            # Cumulative unless --incremental-streaming-output (then each event's new ids).
            self.answer = ids if len(ids) >= total else [*self.answer, *ids]
        finish = meta.get("finish_reason")
        if isinstance(finish, dict):
            self.saw_finish = True
            if finish.get("type") == "abort":
                record.error = f"aborted: {finish.get('message', '')}"[:300]

    def _openai_event(self, t_ns: int, event: dict[str, Any]) -> None:
        record = self.record
        usage = event.get("usage") or None
        text = ""
        for choice in event.get("choices") or []:
            if self.endpoint == "chat":
                text += (choice.get("delta") or {}).get("content") or ""
            else:
                text += choice.get("text") or ""
            if choice.get("finish_reason"):
                self.saw_finish = True
                if choice["finish_reason"] == "abort":
                    record.error = "aborted by the server"
        if text:
            if self.answer is not None:
                self.answer.append(text)
            record.client_tokens += 1
            if usage and usage.get("completion_tokens") is not None:
                new = int(usage["completion_tokens"]) - self.prev_server
                self.prev_server = int(usage["completion_tokens"])
                record.chunks.append((t_ns, max(new, 1)))
            else:
                self.prev_server += 1
                record.chunks.append((t_ns, 1))
        if usage:
            record.prompt_tokens = int(usage.get("prompt_tokens") or record.prompt_tokens)
            details = usage.get("prompt_tokens_details")  # with --enable-cache-report
            if isinstance(details, dict) and details.get("cached_tokens") is not None:
                record.cached_tokens = int(details["cached_tokens"])
            if usage.get("completion_tokens") is not None:
                record.output_tokens = int(usage["completion_tokens"])


def parse_stream(
    endpoint: str, raw: Iterable[tuple[int, bytes]], record: RequestRecord
) -> RequestRecord:
    """Fill `record.chunks`, token counts and errors from a whole recorded stream."""
    parser = StreamParser(endpoint, record)
    for t_ns, data in raw:
        parser.feed(t_ns, data)
    return parser.finish()
