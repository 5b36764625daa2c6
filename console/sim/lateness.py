"""The simulator's own lateness in ideal-timing mode: when a token's bytes were written vs due.

Not an SGLang behaviour: a self-check of the simulator. In ideal mode token k
of a request is due at `created + TTFT + k * ITL` (console.sim.engine.IdealEngine); whatever
the sim adds on top of that (a late timer, a long batch of writes, a busy event loop) is error
a benchmark client would otherwise be blamed for. Each written chunk records the lateness of
the oldest new token in it (the worst one); the first chunk also records the first token's.
Read with `GET /_sim/lateness` (`?reset=1` clears after reading), ideal mode only.
"""

from __future__ import annotations

import struct
from array import array
from typing import Any

MAX_SAMPLES = 1 << 21  # 16 MB of doubles per series at most: a long run keeps its first 2M


def _summary(samples: array[float]) -> dict[str, Any]:
    if not samples:
        return {"count": 0, "p50_ms": None, "p99_ms": None, "max_ms": None}
    ordered = sorted(samples)
    last = len(ordered) - 1
    return {
        "count": len(ordered),
        "p50_ms": round(ordered[last // 2] * 1000, 3),
        "p99_ms": round(ordered[int(0.99 * last)] * 1000, 3),
        "max_ms": round(ordered[last] * 1000, 3),
    }


class Lateness:
    """Write-time minus due-time samples, in seconds."""

    def __init__(self, ttft_s: float, itl_s: float) -> None:
        self.ttft_s = ttft_s
        self.itl_s = itl_s
        self.first: array[float] = array("d")
        self.tokens: array[float] = array("d")

    def wrote(self, created: float, sent_before: int, now: float) -> None:
        """A chunk whose oldest new token is index `sent_before` left at `now`."""
        due = created + self.ttft_s + sent_before * self.itl_s
        if len(self.tokens) < MAX_SAMPLES:
            self.tokens.append(now - due)
        if sent_before == 0 and len(self.first) < MAX_SAMPLES:
            self.first.append(now - due)

    def summary(self) -> dict[str, Any]:
        return {"first_token": _summary(self.first), "chunk": _summary(self.tokens)}

    def raw(self) -> bytes:
        """Both series as bytes (two counts, then the doubles): what a sibling process sends
        when `--sim-ideal-procs` > 1 merges every process's samples (console.sim.procs)."""
        return struct.pack("<QQ", len(self.first), len(self.tokens)) + self.first.tobytes() \
            + self.tokens.tobytes()

    def add_raw(self, data: bytes) -> None:
        """Append another process's `raw()` samples."""
        n_first, n_tokens = struct.unpack_from("<QQ", data)
        body = memoryview(data)[16:]
        self.first.frombytes(body[:8 * n_first])
        self.tokens.frombytes(body[8 * n_first:8 * (n_first + n_tokens)])

    def reset(self) -> None:
        self.first = array("d")
        self.tokens = array("d")
