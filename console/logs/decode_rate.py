"""Which `Decode batch` lines carry a real generation rate.

SGLang's `gen throughput` is the tokens generated since the previous Decode line divided by the
wall time since it (`metrics_reporter.py:942-944`); `last_decode_stats_tic` is not reset while
the server idles. So the first Decode line after an idle spell divides a stale token count by a
window that spans the idle time (a simulator that restarts the window on wake divides it by
almost nothing: the "91k tok/s" spike). Either way that line is not a rate.

The first Decode line we see is a rate: its window began before the log (or the excerpt)
did, but SGLang divided real tokens by real time; a log cut from a busy server often has its
peak there. Only a detected idle spell makes a line not a rate.

An idle spell, read from the log alone: a gap of IDLE_GAP_S or more between two batch lines
that ends in a `Prefill batch` admitting work to an empty server (`#running-req: 0`), or any
gap of STALE_GAP_S (SGLang's own staleness limit, `GEN_THROUGHPUT_STALENESS_SECONDS`).
A slow but busy server logs Decode lines further apart without either sign.
"""

from __future__ import annotations

from console.sglang.prefix import timestamp_seconds

IDLE_GAP_S = 3.0
STALE_GAP_S = 30.0


class DecodeRateGate:
    """Feed every batch line in log order; `decode_is_rate` says whether a Decode line counts.

    `last_stamp` and `after_idle` are read-only for callers: a line stamped `last_stamp` is no
    gap, so `prefill` changes nothing and `decode_is_rate` returns `not after_idle` (and
    clears it); a hot loop may skip those calls (LogScanner._tally).
    """

    __slots__ = ("_last_time", "after_idle", "last_stamp")

    def __init__(self) -> None:
        self.last_stamp: str | None = None
        self._last_time: float | None = None
        self.after_idle = False

    def _gap(self, timestamp: str | None) -> float:
        """Seconds since the previous batch line (0 when unknown or within the same second)."""
        if timestamp is None or timestamp == self.last_stamp:
            return 0.0
        when = timestamp_seconds(timestamp)
        previous = self._last_time
        self.last_stamp, self._last_time = timestamp, when
        if when is None or previous is None:
            return 0.0
        return when - previous

    def prefill(self, running_reqs: int | None, timestamp: str | None) -> None:
        gap = self._gap(timestamp)
        if gap >= STALE_GAP_S or (gap >= IDLE_GAP_S and running_reqs == 0):
            self.after_idle = True

    def decode_is_rate(self, timestamp: str | None) -> bool:
        if self._gap(timestamp) >= STALE_GAP_S:
            self.after_idle = True
        if self.after_idle:
            self.after_idle = False
            return False
        return True
