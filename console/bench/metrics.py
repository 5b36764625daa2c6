"""Per-request records and the arithmetic that turns them into step metrics.

Timestamps are `time.perf_counter_ns()` values (CLOCK_MONOTONIC on Linux, shared by every
process on the host, so records from several worker processes merge into one timeline).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from console.bench.models import Distribution, StepMetrics

NS_PER_MS = 1_000_000


class Chunks:
    """(arrival ns, tokens in that chunk) pairs held as two int64 arrays: 16 bytes a chunk,
    against ~120 for a list of tuples, and never any stream text.
    Reads like a list of pairs, so the metrics code does not care which it gets."""

    __slots__ = ("times", "tokens")

    def __init__(self, pairs: Iterable[tuple[int, int]] = ()) -> None:
        self.times = array("q")
        self.tokens = array("q")
        for pair in pairs:
            self.append(pair)

    def append(self, pair: tuple[int, int]) -> None:
        self.times.append(pair[0])
        self.tokens.append(pair[1])

    def __len__(self) -> int:
        return len(self.times)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return zip(self.times, self.tokens, strict=True)

    def __getitem__(self, index: int) -> tuple[int, int]:
        return self.times[index], self.tokens[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Chunks | list | tuple):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like a list

    def __repr__(self) -> str:
        return f"Chunks({list(self)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_chunks_from_arrays, (self.times, self.tokens))


def _chunks_from_arrays(times: array[int], tokens: array[int]) -> Chunks:
    chunks = Chunks()
    chunks.times, chunks.tokens = times, tokens
    return chunks


@dataclass
class RequestRecord:
    """One request as the client saw it. `chunks` holds (arrival ns, tokens in that chunk)
    for every chunk that carried generated tokens, in arrival order; nothing else of the
    stream is kept."""

    start_ns: int
    end_ns: int = 0
    chunks: Chunks = field(default_factory=Chunks)
    prompt_tokens: int = 0
    output_tokens: int = 0  # from the server (meta_info / usage) when it said
    requested_output: int = 0
    error: str | None = None
    incomplete: bool = False  # cut off by a time box (not an error)
    client_tokens: int = 0  # client-side count (chunks / deltas), only a cross-check
    cached_tokens: int = 0  # prompt tokens the server's prefix cache supplied, as it said

    def __post_init__(self) -> None:
        if not isinstance(self.chunks, Chunks):
            self.chunks = Chunks(self.chunks)

    @property
    def ok(self) -> bool:
        return self.error is None and not self.incomplete

    @property
    def ttft_ns(self) -> int | None:
        return self.chunks[0][0] - self.start_ns if self.chunks else None

    def tokens_until(self, deadline_ns: int) -> int:
        return sum(n for t, n in self.chunks if t <= deadline_ns)

    def to_tuple(self) -> tuple[object, ...]:
        """Compact form for sending between processes."""
        return (
            self.start_ns,
            self.end_ns,
            self.chunks,
            self.prompt_tokens,
            self.output_tokens,
            self.requested_output,
            self.error,
            self.incomplete,
            self.client_tokens,
            self.cached_tokens,
        )

    @classmethod
    def from_tuple(cls, data: Sequence[object]) -> RequestRecord:
        return cls(*data)  # type: ignore[arg-type]


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default method) of already sorted values."""
    if not sorted_values:
        raise ValueError("no values")
    rank = (len(sorted_values) - 1) * q / 100.0
    lo = math.floor(rank)
    hi = math.ceil(rank)
    if lo == hi:
        return float(sorted_values[lo])
    return float(sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (rank - lo))


def distribution(values: Iterable[float]) -> Distribution:
    ordered = sorted(values)
    if not ordered:
        return Distribution()
    return Distribution(
        mean=sum(ordered) / len(ordered),
        p50=percentile(ordered, 50),
        p90=percentile(ordered, 90),
        p99=percentile(ordered, 99),
        count=len(ordered),
    )


def itl_samples_ms(record: RequestRecord) -> list[float]:
    """Per-token inter-token latency: each chunk gap divided by the tokens that chunk
    brought, repeated once per token (SGLang bench_serving's definition for /generate)."""
    samples: list[float] = []
    pairs = iter(record.chunks)
    prev_t = next(pairs, (0, 0))[0]
    for t, n in pairs:
        gap, prev_t = t - prev_t, t
        if n <= 0:
            continue
        per_token = gap / n / NS_PER_MS
        samples.extend([per_token] * n)
    return samples


def step_metrics(
    records: Sequence[RequestRecord],
    concurrency: int,
    *,
    window: tuple[int, int] | None = None,
    workers: int = 1,
) -> StepMetrics:
    """Aggregate one step. `window` (start_ns, end_ns) is the time box when there was one;
    otherwise the window runs from the first request's start to the last one's end."""
    if window is None:
        starts = [r.start_ns for r in records]
        ends = [r.end_ns for r in records if r.end_ns]
        window = (min(starts), max(ends)) if starts and ends else (0, 0)
    duration_s = max(window[1] - window[0], 0) / 1e9
    done = [r for r in records if r.ok]
    cut = [r for r in records if r.incomplete and r.error is None]
    errors = [r for r in records if r.error is not None]

    output_tokens = sum(r.output_tokens for r in done) + sum(
        r.tokens_until(window[1]) for r in cut
    )
    input_tokens = sum(r.prompt_tokens for r in done)
    input_tokens += sum(r.prompt_tokens for r in cut if r.chunks)
    ttft = [r.ttft_ns / NS_PER_MS for r in done if r.ttft_ns is not None]
    e2e = [(r.end_ns - r.start_ns) / NS_PER_MS for r in done]
    tpot = [
        (r.end_ns - r.start_ns - (r.ttft_ns or 0)) / NS_PER_MS / (r.output_tokens - 1)
        for r in done
        if r.output_tokens > 1 and r.ttft_ns is not None
    ]
    itl: list[float] = []
    for r in done:
        itl.extend(itl_samples_ms(r))
    # Little's law over the window: time-averaged number of requests in flight.
    busy_ns = 0
    for r in records:
        end = r.end_ns or window[1]
        busy_ns += max(0, min(end, window[1]) - max(r.start_ns, window[0]))
    rate = (lambda n: n / duration_s) if duration_s > 0 else (lambda n: 0.0)
    samples: list[str] = []
    for r in errors:
        if r.error and r.error not in samples:
            samples.append(r.error)
        if len(samples) >= 5:
            break
    return StepMetrics(
        concurrency=concurrency,
        completed=len(done),
        errors=len(errors),
        incomplete=len(cut),
        duration_s=duration_s,
        request_per_s=rate(len(done)),
        input_tok_s=rate(input_tokens),
        output_tok_s=rate(output_tokens),
        total_tok_s=rate(input_tokens + output_tokens),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        measured_concurrency=(busy_ns / 1e9 / duration_s) if duration_s > 0 else 0.0,
        ttft_ms=distribution(ttft),
        itl_ms=distribution(itl),
        tpot_ms=distribution(tpot),
        e2e_ms=distribution(e2e),
        output_len_mismatches=sum(
            1 for r in done if r.requested_output and r.output_tokens != r.requested_output
        ),
        error_samples=samples,
        workers=workers,
        cached_tokens=sum(r.cached_tokens for r in done),
    )
