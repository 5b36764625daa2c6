"""Presence: whether a mechanism is happening, from the lines themselves (how many show it,
of how many, over what span), apart from what it costs (console/diagnose/effects.py).

Sentences built here quote the lines' own figures (ranges of values as printed, counts of
lines): a number a log does not hold is never said without "derived" (tests check it).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

from console.diagnose.models import DecodePoint, Presence, StepEvidence

# A queue at this usage, or with less room left than one running request's mean share of the
# pool, waits for the pool, not for a running cap (SGLang admits a request only when its
# tokens, plus the running requests' reserved growth, fit: schedule_policy.py).
HIGH_USAGE = 0.9
PLAIN_LINES = 2  # the fewest lines that say a mechanism outright


def pool_bound(p: DecodePoint) -> bool:
    """The KV pool, not a cap, holds this line's batch: usage high, or no room left for one
    more request the size of the running ones' mean."""
    usage = p.token_usage
    if usage is None or p.running <= 0:
        return False
    return usage >= HIGH_USAGE or (1.0 - usage) < usage / p.running


def waiting(p: DecodePoint) -> int:
    """The line's requests waiting for the batch: `#queue-req`, and on a PD decode node
    `#prealloc-req`, those sent over from prefill that wait for decode KV (SGLang's
    disaggregation/decode.py `DecodePreallocQueue.pop_preallocated` lets one go only when
    the pool's allocatable tokens fit it; `#queue-req` there counts only arrived KV)."""
    return p.queue + p.prealloc


def waiting_text(points: Iterable[DecodePoint]) -> str:
    """`#queue-req lo..hi` as printed, and `#prealloc-req lo..hi` where those lines have
    requests waiting for decode KV (a PD decode node)."""
    data = list(points)
    text = f"#queue-req {span(p.queue for p in data)}"
    if any(p.prealloc for p in data):
        text += f", #prealloc-req {span(p.prealloc for p in data)}"
    return text


def held_on_node(step: StepEvidence) -> int:
    """The requests a step holds: its level, or more where a PD decode node's lines show
    running + waiting above it (#prealloc-req is outside the #running-req + #queue-req a
    log's lines are grouped by)."""
    return max([step.concurrency, *(p.running + waiting(p) for p in step.decode if p.prealloc)])


def waits_for_pool(p: DecodePoint, cap: int | None) -> bool:
    """A line with waiting requests held by the KV pool: pool-bound and below the
    scheduler's cap. At the cap the cap decides (SGLang admits nothing past
    max_running_requests whatever the pool holds; on a PD decode node the queued requests'
    KV already counts in the usage)."""
    if waiting(p) <= 0 or (cap and p.running >= cap):
        return False
    return pool_bound(p) or held_below_cap(p, cap)


def held_below_cap(p: DecodePoint, cap: int | None) -> bool:
    """Waiting requests, a tenth of the batch or more, while the batch sits below a known
    cap: the pool's reservation for the running requests' remaining tokens (SGLang admits a
    request only when its prompt and its share of the running ones' future tokens fit), even
    where the usage, the tokens held now, still has room."""
    return bool(cap) and p.running < 0.95 * (cap or 0) and \
        waiting(p) >= max(2.0, 0.1 * p.running)


def span(values: Iterable[float], fmt: str = "{:g}") -> str:
    """`lo..hi` of the values as printed (one value when all are equal)."""
    data = list(values)
    if not data:
        return "?"
    lo, hi = min(data), max(data)
    return fmt.format(lo) if lo == hi else f"{fmt.format(lo)}..{fmt.format(hi)}"


def _clock(t: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t))


def when(steps: Sequence[StepEvidence]) -> str:
    """The log's own wall time over these steps' lines (`HH:MM:SS-HH:MM:SS`, an en dash between)."""
    known = [s for s in steps if s.started_at]
    if not known:
        return ""
    start = min(s.started_at for s in known)
    end = max(s.finished_at for s in known)
    return _clock(start) if _clock(start) == _clock(end) else \
        f"{_clock(start)}\u2013{_clock(end)}"


def presence(shown: Sequence[tuple[StepEvidence, DecodePoint]], looked: int, text: str,
             *, minimum: int = PLAIN_LINES) -> Presence | None:
    """The lines `shown` (with their step) out of `looked`: "plain" at `minimum` lines or
    more, "weak" below; None when no line shows it."""
    if not shown:
        return None
    steps = list({id(s): s for s, _ in shown}.values())
    known = [s for s in steps if s.started_at and s.finished_at]
    span_s = (max(s.finished_at for s in known) - min(s.started_at for s in known)
              if known else None)
    stamp = when(steps)
    return Presence(lines=len(shown), of=looked, span_s=span_s,
                    sure="plain" if len(shown) >= minimum else "weak",
                    text=text + (f", {stamp}" if stamp else ""))


def decode_lines(steps: Sequence[StepEvidence]) -> list[tuple[StepEvidence, DecodePoint]]:
    return [(s, p) for s in steps for p in s.decode]
