"""The steady-state window of one sweep step: where the offered load was really there.

A closed-loop step has a ramp-up (streams starting, the first prefills) and a drain (the last
requests finishing one by one while fewer and fewer are in flight). Whole-run averages mix both
into the number, and the share they take grows with concurrency (a Locust sweep found "the
measured window shrank exactly as concurrency rose", reference/load-generation.md §2.5).

Source: SGLang's `python/sglang/benchmark/steady_state.py` (`find_steady_state_window`, used by
`python -m sglang.benchmark.steady_state_serving --steady-state-concurrency-ratio R`, sglang PR
#30918; reference/load-generation.md §0.8 and reference/plateau-causes.md "Measurement
artefacts"): the longest continuous interval in which the client's in-flight requests stay at or
above a threshold, generated tokens counted by their arrival timestamps inside it.

Three differences from SGLang, all deliberate:
- The threshold is `ceil(ratio x target concurrency)`, not `ratio x observed peak`: a step whose
  in-flight count never gets near its target (too few prompts, a client that cannot keep up) is
  then flagged as never reaching steady state instead of being measured against its own peak.
- A closed-loop stream is briefly at zero between one request's end and its next request's
  start (client turnaround). Dips below the threshold shorter than `GAP_FRACTION` of the
  median request latency are bridged, so at concurrency 1 or 2 the window is not cut into
  single requests. SGLang's version has no such case to handle at high concurrency.
- Prompt tokens count when their request's first token arrives inside the window (the prefill
  is done then), not when the request was sent: every closed-loop stream starts at once, so
  counting by arrival would drop the first wave's prompts from a window that starts with it.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from console.bench.metrics import RequestRecord
from console.bench.models import SteadyState

DEFAULT_RATIO = 0.8  # SGLang's documented example value (steady_state_serving.py usage)
GAP_FRACTION = 0.1  # bridge in-flight dips shorter than this share of the median request
# A window shorter than this share of the step (or holding no completed request) is not a
# steady state worth reporting: the step was all ramp and drain.
MIN_WINDOW_SHARE = 0.2


@dataclass(frozen=True)
class Window:
    start_ns: int
    end_ns: int

    @property
    def seconds(self) -> float:
        return max(0, self.end_ns - self.start_ns) / 1e9


def in_flight_intervals(
    records: Sequence[RequestRecord], end_cap: int
) -> list[tuple[int, int, int]]:
    """(start, end, requests in flight) for every interval between request starts and ends."""
    events: dict[int, int] = {}
    for r in records:
        end = min(r.end_ns or end_cap, end_cap)
        if end <= r.start_ns:
            continue
        events[r.start_ns] = events.get(r.start_ns, 0) + 1
        events[end] = events.get(end, 0) - 1
    times = sorted(events)
    intervals: list[tuple[int, int, int]] = []
    level = 0
    for t, t_next in itertools.pairwise(times):
        level += events[t]
        intervals.append((t, t_next, level))
    return intervals


def find_window(
    records: Sequence[RequestRecord],
    target: int,
    *,
    ratio: float = DEFAULT_RATIO,
    end_cap: int | None = None,
    not_before_ns: int | None = None,
) -> tuple[Window | None, int]:
    """The longest span with in-flight >= ceil(ratio x target) (short dips bridged), and the
    threshold. None when in-flight never reached the threshold. `not_before_ns`: where a
    fresh server's warm-up ended (console/bench/warmup.py); no window starts before it."""
    if not 0 < ratio <= 1:
        raise ValueError("steady-state ratio must be in (0, 1]")
    threshold = max(1, math.ceil(ratio * target))
    cap = end_cap if end_cap is not None else max((r.end_ns for r in records), default=0)
    latencies = [r.end_ns - r.start_ns for r in records if r.end_ns > r.start_ns]
    max_gap = int(GAP_FRACTION * statistics.median(latencies)) if latencies else 0
    spans: list[list[int]] = []
    floor = not_before_ns if not_before_ns is not None else 0
    for start, end, level in in_flight_intervals(records, cap):
        if level < threshold or end <= floor:
            continue
        start = max(start, floor)
        if spans and start - spans[-1][1] <= max_gap:
            spans[-1][1] = end  # a short dip (client turnaround): the same steady state
        else:
            spans.append([start, end])
    if not spans:
        return None, threshold
    start, end = max(spans, key=lambda s: s[1] - s[0])  # first of equals, like SGLang
    return Window(start, end), threshold


def steady_state(
    records: Sequence[RequestRecord],
    target: int,
    *,
    ratio: float = DEFAULT_RATIO,
    step_window: tuple[int, int] | None = None,
    not_before_ns: int | None = None,
) -> SteadyState:
    """Throughput over the step's steady-state window (`reached` False, and the rates zero,
    when there was none); the window starts no earlier than `not_before_ns` (the end of a
    fresh server's warm-up)."""
    cap = step_window[1] if step_window else None
    window, threshold = find_window(records, target, ratio=ratio, end_cap=cap,
                                    not_before_ns=not_before_ns)
    starts = [r.start_ns for r in records]
    ends = [r.end_ns or (cap or 0) for r in records]
    step_s = (max(ends) - min(starts)) / 1e9 if starts and ends else 0.0
    if window is None or window.seconds <= 0:
        return SteadyState(ratio=ratio, threshold=threshold, reached=False, step_s=step_s)
    good = [r for r in records if r.error is None]
    output = sum(r.tokens_until(window.end_ns) - r.tokens_until(window.start_ns - 1) for r in good)
    # A prompt counts when its prefill is done, i.e. at its first token (SGLang counts it at
    # the request's arrival; with every stream starting at once that would drop the first
    # wave's prompts, which the window's own start is made of).
    prompt = sum(
        r.prompt_tokens
        for r in good
        if r.chunks and window.start_ns <= r.chunks[0][0] <= window.end_ns
    )
    completed = sum(1 for r in good if r.ok and window.start_ns <= r.end_ns <= window.end_ns)
    busy = sum(
        max(0, min(r.end_ns or window.end_ns, window.end_ns) - max(r.start_ns, window.start_ns))
        for r in records
    )
    seconds = window.seconds
    # Steady means finished requests were replaced while the window lasted: one wave
    # (num_prompts == concurrency) starts everything at once and only drains (SGLang's docs
    # advise num prompts >= 5x concurrency, reference/plateau-causes.md). A request that
    # merely started late in the first wave (streams do not all start in the same
    # nanosecond) replaced nothing: a replacement starts after some request has finished.
    first_end = min((r.end_ns for r in records if r.end_ns > 0), default=window.end_ns)
    replaced = any(max(window.start_ns, first_end) <= r.start_ns < window.end_ns
                   for r in records)
    long_enough = step_s <= 0 or seconds >= MIN_WINDOW_SHARE * step_s
    reached = completed > 0 and replaced and long_enough
    origin = min(starts)
    return SteadyState(
        ratio=ratio,
        threshold=threshold,
        reached=reached,
        step_s=step_s,
        start_s=(window.start_ns - origin) / 1e9,
        window_s=seconds,
        completed=completed,
        input_tok_s=prompt / seconds,
        output_tok_s=output / seconds,
        total_tok_s=(prompt + output) / seconds,
        request_per_s=completed / seconds,
        mean_in_flight=busy / 1e9 / seconds,
    )
