"""The steady-state window of a step (console.bench.steady, after SGLang's steady_state.py)."""

from __future__ import annotations

from console.bench.metrics import Chunks, RequestRecord
from console.bench.steady import find_window, steady_state

MS = 1_000_000


def _req(start_ms: float, end_ms: float, tokens: int = 10, prompt: int = 100) -> RequestRecord:
    """A request whose `tokens` output tokens arrive evenly between start+10 ms and its end."""
    start, end = int(start_ms * MS), int(end_ms * MS)
    first = start + 10 * MS
    step = (end - first) // max(1, tokens - 1)
    chunks = [(first + i * step, 1) for i in range(tokens)]
    return RequestRecord(start_ns=start, end_ns=end, chunks=Chunks(chunks), prompt_tokens=prompt,
                         output_tokens=tokens, requested_output=tokens)


def _closed_loop(streams: int, rounds: int, *, stagger_ms: float, length_ms: float = 100,
                 turnaround_ms: float = 1) -> list[RequestRecord]:
    """`streams` closed-loop streams starting `stagger_ms` apart (a ramp), each sending
    `rounds` requests back to back; the stagger carries through, so the end is a drain."""
    out = []
    for s in range(streams):
        t = s * stagger_ms
        for _ in range(rounds):
            out.append(_req(t, t + length_ms))
            t += length_ms + turnaround_ms
    return out


def test_the_window_excludes_ramp_up_and_drain() -> None:
    records = _closed_loop(10, 6, stagger_ms=10)
    window, threshold = find_window(records, 10, ratio=0.8)
    assert threshold == 8
    assert window is not None
    # 8 streams are in flight from the 8th start (70 ms) until the 3rd stream finishes for
    # good (2 + 6 x 101 - 1 + 20 ms); the first and last few streams' lone time is cut off.
    assert 69 * MS <= window.start_ns <= 71 * MS
    assert 624 * MS <= window.end_ns <= 626 * MS
    steady = steady_state(records, 10, ratio=0.8)
    assert steady.reached and steady.threshold == 8
    # 10 tokens per 100 ms per stream, >= 8 streams in flight: close to 100 tok/s x streams.
    assert 80 * 10 * 0.95 <= steady.output_tok_s <= 100 * 10 * 1.05
    assert 8 <= steady.mean_in_flight <= 10


def test_a_step_that_never_fills_its_target_is_flagged() -> None:
    # Target 16, but only 8 requests were ever in flight (too few prompts for the level).
    records = _closed_loop(8, 3, stagger_ms=0)
    window, threshold = find_window(records, 16, ratio=0.8)
    assert window is None and threshold == 13
    steady = steady_state(records, 16, ratio=0.8)
    assert not steady.reached
    assert steady.total_tok_s == 0.0


def test_a_single_stream_keeps_one_window_across_its_turnarounds() -> None:
    # At concurrency 1 in-flight drops to 0 between requests for the client's turnaround;
    # those dips are bridged, so the window spans the whole loop, not one request.
    records = _closed_loop(1, 5, stagger_ms=0, turnaround_ms=2)
    window, _ = find_window(records, 1)
    assert window is not None
    assert window.start_ns == 0 and window.end_ns == records[-1].end_ns
    # A long pause (not a turnaround) is not bridged.
    records = [_req(0, 100), _req(400, 500), _req(501, 601), _req(602, 702)]
    window, _ = find_window(records, 1)
    assert window is not None and window.start_ns == 400 * MS


def test_one_wave_is_all_ramp_and_drain() -> None:
    # num_prompts == concurrency: every request starts together and they finish one by one.
    records = [_req(0, 100 + 40 * i) for i in range(10)]
    steady = steady_state(records, 10, ratio=0.8)
    assert steady.window_s > 0
    assert not steady.reached  # nothing finished was replaced: it only drained


def test_one_wave_with_staggered_starts_has_no_steady_state() -> None:
    """Streams of one wave start a few ms apart; the late starters replaced nothing (no
    request had finished), so the step has no steady state (README: `(no steady state)`)."""
    from console.bench.metrics import Chunks, RequestRecord
    from console.bench.steady import steady_state

    ms = 1_000_000
    records = [RequestRecord(start_ns=i * 2 * ms, end_ns=1000 * ms + i * ms,
                             chunks=Chunks([(500 * ms + i * ms, 10)]), prompt_tokens=5,
                             output_tokens=10) for i in range(16)]
    state = steady_state(records, 16)
    assert not state.reached
    # The same streams, each followed by a second request once its first finished: steady.
    again = [RequestRecord(start_ns=r.end_ns + ms, end_ns=r.end_ns + 1000 * ms,
                           chunks=Chunks([(r.end_ns + 500 * ms, 10)]), prompt_tokens=5,
                           output_tokens=10) for r in records]
    assert steady_state(records + again, 16).reached
