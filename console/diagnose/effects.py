"""Sizes of effects, from the evidence alone: decode step times, their fit against the batch,
the run's own noise, and the arithmetic that turns a step-time excess into a share of the lost
throughput and a predicted gain.

A decode step's time is read from a `Decode batch` line as #running-req / gen throughput: SGLang
computes gen throughput as the tokens decoded since the previous Decode line over the time
since it (scheduler_metrics_mixin / metrics_reporter `log_decode_stats`), so this is the mean
time of one decode round over the logging interval, prefill interruptions included.

Shares are of the step's time: a mechanism that adds `excess` seconds to a step of `total`
seconds explains `excess / total` of the throughput lost to it (without it the same tokens
take `total - excess`), and removing it predicts a gain of `excess / (total - excess)`.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from console.diagnose.models import DecodePoint, StepEvidence

MIN_EFFECT = 0.03  # the smallest share reported at all, whatever the run's noise
CLEAR_EFFECT = 0.15  # a share at or above this is a cause; below it, a candidate


@dataclass(frozen=True)
class Fit:
    """Decode step seconds = intercept + slope x batch (least squares over per-step medians)."""

    intercept: float
    slope: float
    points: int

    def at(self, batch: float) -> float:
        return max(1e-6, self.intercept + self.slope * batch)


def line_seconds(point: DecodePoint) -> float | None:
    if not point.gen_throughput or point.running <= 0:
        return None
    return point.running / point.gen_throughput


def median(values: Iterable[float]) -> float:
    data = list(values)
    return float(statistics.median(data)) if data else 0.0


def step_seconds(points: Sequence[DecodePoint]) -> float | None:
    """Median seconds per decode round over these lines. The first line of a step spans the
    idle gap before it (SGLang does not restart its window), so the median, not the mean."""
    times = [t for p in points if (t := line_seconds(p)) is not None]
    return median(times) if times else None


def batch_of(points: Sequence[DecodePoint]) -> float:
    return median(p.running for p in points)


def decode_step_s(step: StepEvidence, lines: Sequence[DecodePoint] | None = None
                  ) -> float | None:
    """One step's typical decode round: the smaller of the client's ITL p50 and the lines'
    median. Both can only overstate it: the lines' figure also holds the prefills run
    between them (more of them the higher the load), the client's holds its own lateness
    (a busy client, a loaded machine)."""
    from_lines = step_seconds(step.decode if lines is None else lines)
    client = step.client
    if lines is not None or client is None or not client.itl_p50_ms:
        return from_lines
    itl = client.itl_p50_ms / 1000.0
    return itl if from_lines is None else min(itl, from_lines)


def fit(steps: Sequence[StepEvidence], graph: bool | None, *, client: bool = True
        ) -> Fit | None:
    """Decode step time against batch over the steps of one kind (`graph` True: most of the
    step's Decode lines replayed a CUDA graph; False: most ran eagerly; None: all). None
    without a step. `client` False: the Decode lines' own step times only (when the client's
    timing is itself in question)."""
    pairs: list[tuple[float, float]] = []
    for step in steps:
        known = [p for p in step.decode if p.cuda_graph is not None]
        if not step.decode:
            continue
        eager = sum(1 for p in known if not p.cuda_graph) / len(known) if known else 0.0
        if (graph is True and eager >= 0.5) or (graph is False and eager < 0.5):
            continue
        seconds = decode_step_s(step) if client else step_seconds(step.decode)
        if seconds is not None:
            pairs.append((batch_of(step.decode), seconds))
    return _least_squares(pairs)


def fit_lines(steps: Sequence[StepEvidence], graph: bool | None) -> Fit | None:
    """Decode step time against batch over single Decode lines (`graph` True: lines that
    replayed a CUDA graph; False: eager ones; None: all), for steps split from a log file:
    there the steps are groupings of lines, not measured runs, so every line is a point
    (#running-req, #running-req / gen throughput), the median per batch size. An estimate: a
    line's #running-req is the batch when it was printed, its throughput the mean over the
    logging interval (--decode-log-interval steps)."""
    return line_fits(steps)[graph]


def line_fits(steps: Sequence[StepEvidence]) -> dict[bool | None, Fit | None]:
    """`fit_lines` for graph True, False and None at once: one pass over the lines (a 1M-line
    log holds half a million Decode lines)."""
    by_batch: dict[bool | None, dict[int, list[float]]] = {True: {}, False: {}, None: {}}
    everything = by_batch[None]
    for step in steps:
        for p in step.decode:
            rate = p.gen_throughput
            if not rate or p.running <= 0:
                continue
            seconds = p.running / rate
            everything.setdefault(p.running, []).append(seconds)
            if p.cuda_graph is not None:
                by_batch[p.cuda_graph].setdefault(p.running, []).append(seconds)
    # The median per batch size: a line after an idle gap spans the gap (step_seconds).
    return {kind: _least_squares([(float(b), median(ts)) for b, ts in sorted(table.items())])
            for kind, table in by_batch.items()}


def _least_squares(pairs: list[tuple[float, float]]) -> Fit | None:
    if not pairs:
        return None
    xs = [x for x, _ in pairs]
    if len(set(xs)) < 2:
        return Fit(intercept=median(y for _, y in pairs), slope=0.0, points=len(pairs))
    mx, my = statistics.fmean(xs), statistics.fmean(y for _, y in pairs)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = max(0.0, sum((x - mx) * (y - my) for x, y in pairs) / sxx)
    intercept = max(0.0, my - slope * mx)
    return Fit(intercept=intercept, slope=slope, points=len(pairs))


def noise_share(repeats: Mapping[float, list[float]]) -> float:
    """The run's noise as a share of throughput: twice the largest coefficient of variation of
    a concurrency's repeated throughputs (about a 95% band), never below MIN_EFFECT (without
    repeats, MIN_EFFECT: the simulator's and a quiet host's step-to-step spread is 1-2%).
    Decode-line spread is not used: lines that held a prefill differ by a mechanism."""
    spreads = [statistics.stdev(v) / statistics.fmean(v) for v in repeats.values()
               if len(v) >= 2 and statistics.fmean(v) > 0]
    return max(MIN_EFFECT, 2.0 * max(spreads)) if spreads else MIN_EFFECT


def decode_wall_share(step: StepEvidence, seconds: float, running: float) -> float:
    """The share of the step's wall time spent in decode rounds: rounds per second (the
    client's output tok/s over the batch) x seconds per round, at most 1; 1 when the client's
    output rate is not known (a log alone). A change that only shortens decode rounds (CUDA
    graphs: prefill does not replay them) gains throughput on this share of the time only:
    the rest (prefill) is unchanged, so a decode-step saving is not a throughput one."""
    client = step.client
    if client is None or not client.output_tok_s or running <= 0 or seconds <= 0:
        return 1.0
    return min(1.0, client.output_tok_s / running * seconds)


def share(excess: float, total: float) -> float:
    """The share of `total` that `excess` is, in [0, 0.99]."""
    if total <= 0 or excess <= 0:
        return 0.0
    return min(0.99, excess / total)


def gain_pct(explained: float) -> float:
    """Predicted throughput gain (%) when a mechanism explaining this share is removed."""
    explained = min(0.99, max(0.0, explained))
    return round(explained / (1.0 - explained) * 100.0, 1)


def throughput_share(batch_now: float, batch_fixed: float, model: Fit | None,
                     wall: float = 1.0) -> float:
    """The share of throughput lost by decoding `batch_now` requests instead of `batch_fixed`,
    with step time from the fit. Time per output token is a decode round's share,
    step(b) / b, plus the prefill's, which a bigger batch does not shorten: `wall` (the share
    of the step's time in decode rounds, decode_wall_share) sizes it from the run itself
    (1: decode only, throughput ~ batch / step time)."""
    if batch_fixed <= batch_now or batch_now <= 0:
        return 0.0
    if model is None:
        return 1.0 - batch_now / batch_fixed
    decode_now = model.at(batch_now) / batch_now
    decode_fixed = model.at(batch_fixed) / batch_fixed
    other = decode_now * (1.0 / max(wall, 1e-3) - 1.0)  # prefill time per output token
    before, after = decode_now + other, decode_fixed + other
    return max(0.0, 1.0 - after / before) if before > 0 else 0.0


def batch_share_range(batch_now: float, batch_fixed: float, model: Fit | None,
                      wall: float) -> tuple[float, float, float]:
    """(low, middle, high) share of throughput lost to a batch held at `batch_now`: low takes
    the prefill's time per output token as unchanged by a bigger batch, high as shrinking like
    a decode round's (prefill batches grow too); the middle is the share whose gain is the
    two gains' mean. The simulator's cap of 32 at c=256 measured +101% between +65 and +126."""
    low = throughput_share(batch_now, batch_fixed, model, wall)
    high = throughput_share(batch_now, batch_fixed, model, 1.0)
    gain = (low / (1.0 - low) + high / (1.0 - high)) / 2.0 if high < 1.0 else 0.0
    return low, gain / (1.0 + gain), high
