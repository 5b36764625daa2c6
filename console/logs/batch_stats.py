"""Batch lines of log events: the grammar is console/sglang/batch.py; this module adapts it to
LogEvent and keeps the names other modules import."""

from __future__ import annotations

from console.logs.models import LogEvent
from console.sglang.batch import (
    DECODE_FAST,
    DECODE_SHAPE,
    PREFILL_FAST,
    PREFILL_SHAPE,
    BatchStats,
    DecodeValues,
    ScanValues,
    batch_shape,
    decode_values,
    parse_batch,
    parse_batch_general,
    scan_values,
)

parse_batch_message = parse_batch

__all__ = ["DECODE_FAST", "DECODE_SHAPE", "PREFILL_FAST", "PREFILL_SHAPE", "BatchStats",
           "DecodeValues", "ScanValues", "batch_shape", "batch_stats", "decode_values",
           "parse_batch", "parse_batch_general", "parse_batch_message", "scan_values"]


def batch_stats(event: LogEvent) -> BatchStats | None:
    if not event.is_batch:
        return None
    return parse_batch(event.message, timestamp=event.timestamp, ranks=event.ranks)
