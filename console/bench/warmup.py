"""A freshly started server's warm-up: where its latency converged, so the steady-state figures
leave the warm-up out rather than average it in.

After a restart the first requests pay for runtime JIT compiles, autotuning and cold caches
(sglang#28706: TTFT 6,350 ms on a fresh restart with 11 runtime JIT compiles against 3,661 ms
converged, "within the first ~50-100 requests"; reference/load-generation.md §2.5). An A/B
restarts the server before every pass, so a warm-up counted as load makes whichever side
warms up slower look worse, by an amount that depends on the step's length.

How it is found, per step, from the client's own records:
- each request's decode pace (TPOT: the time from its first token to its end over its
  tokens after the first). Not TTFT: a closed-loop step's first wave queues all its prefills
  at once, so early TTFTs are high on a warm server too (that is the ramp the steady window
  already leaves out); the first wave decodes without prefills in between, so its TPOT is if
  anything lower than later requests'.
- the converged pace: the median TPOT of the step's second half (by start) less its last
  `concurrency` requests (the final wave, which drains at a shrinking batch and decodes
  faster), and how tightly it holds (`tolerance`: 4 x its median absolute deviation, at
  least `MIN_TOLERANCE`).
- the warm-up ends at the first request after which every run of `window` consecutive
  requests (by start, up to the step's middle) has a median TPOT within the tolerance; its
  first token is the cut (`cut_ns`). A step still slow at its middle never converged.
- the server log's warm-up lines seen during the step (console/sglang/warmup.py: DeepGEMM
  JIT, torch.compile, FlashInfer autotune) are counted and said with it. A step with runtime
  compiles in its log but no convergence point in its latency (one wave, all of it slowed
  alike, or too few requests to tell) is all warm-up: nothing in it is called steady.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass

from console.bench.metrics import NS_PER_MS, RequestRecord
from console.bench.models import SteadyState, StepMetrics, Warmup
from console.bench.steady import DEFAULT_RATIO, steady_state
from console.config_models import WarmupLoad
from console.sglang.warmup import warmup_sign

MIN_TOLERANCE = 0.05  # TPOT within 5 % of the converged pace counts as converged
PACE_ONLY_TOLERANCE = 0.3  # without runtime compiles in the log, 30 %
MAD_FACTOR = 4.0
MIN_REQUESTS = 8  # fewer completed requests say nothing about convergence


@dataclass(frozen=True)
class Found:
    warmup: Warmup
    cut_ns: int | None  # no steady window starts before this (None: nothing to cut)


def tpot_ms(record: RequestRecord) -> float | None:
    """The request's decode pace: first token to end, over the tokens after the first."""
    if not record.ok or not record.chunks or record.output_tokens < 2:
        return None
    return (record.end_ns - record.chunks[0][0]) / NS_PER_MS / (record.output_tokens - 1)


def log_signs(lines: Iterable[str]) -> dict[str, int]:
    """The warm-up lines among `lines`, counted by kind."""
    counts = Counter(sign for line in lines if (sign := warmup_sign(line)) is not None)
    return dict(sorted(counts.items()))


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def detect(records: Sequence[RequestRecord], concurrency: int,
           log_lines: Iterable[str] = ()) -> Found:
    """Where this step's latency converged (module docstring)."""
    signs = log_signs(log_lines)
    paced = sorted(((r, p) for r in records if (p := tpot_ms(r)) is not None),
                   key=lambda rp: rp[0].start_ns)
    if len(paced) < MIN_REQUESTS:
        return _all_warmup(records, signs, None) if _compiled(signs) else \
            Found(Warmup(detected=False, signs=signs), None)
    paces = [p for _, p in paced]
    half = len(paces) // 2
    late = paces[half:len(paces) - concurrency]
    late = late if len(late) >= MIN_REQUESTS // 2 else paces[half:]
    converged = statistics.median(late)
    spread = statistics.median(abs(p - converged) for p in late)
    tolerance = max(MIN_TOLERANCE, MAD_FACTOR * spread / converged)
    if not _compiled(signs):
        # Latency alone, with no compile in the log: only a slowdown a busy machine cannot
        # make counts (a loaded CI run's wall-clock pace varied enough to cut a steady state
        # at 5%; the warm-ups this is for are far larger: sglang#28706 saw 6,350 vs 3,661 ms)
        tolerance = max(tolerance, PACE_ONLY_TOLERANCE)
    limit = converged * (1.0 + tolerance)
    window = max(3, min(concurrency, len(paces) // 8))
    last_slow = -1
    for k in range(half + 1):
        if statistics.median(paces[k:k + window]) > limit:
            last_slow = k
    if last_slow < 0 and _compiled(signs):  # compiled, yet no slow start: slowed all alike
        return _all_warmup(records, signs, _median(paces))
    if last_slow < 0:
        return Found(Warmup(detected=False, signs=signs, steady_tpot_ms=converged,
                            tolerance=tolerance), None)
    if last_slow >= half and not _compiled(signs) and len(paces) < 2 * concurrency:
        # Under two waves the late requests run while the step drains (fewer in flight, a
        # faster pace): a slower first wave is the load, not a warm-up, unless the log says
        # the server compiled (1.5 waves at c=8 was called all warm-up, its steady lost).
        return Found(Warmup(detected=False, signs=signs, steady_tpot_ms=converged,
                            tolerance=tolerance), None)
    if last_slow >= half:  # still slow at the step's middle: the whole step is warm-up
        return _all_warmup(records, signs, _median(paces), tolerance)
    first = min(r.start_ns for r in records)
    cut_at = last_slow + 1
    cut_ns = paced[cut_at][0].chunks[0][0]
    before = sum(1 for r in records if r.start_ns < cut_ns)
    return Found(Warmup(detected=True, requests=before, seconds=(cut_ns - first) / 1e9,
                        signs=signs, warm_tpot_ms=_median(paces[:cut_at]),
                        steady_tpot_ms=_median(paces[cut_at:]), tolerance=tolerance),
                 cut_ns)


def _compiled(signs: dict[str, int]) -> bool:
    """Runtime compiles in the step's log (a capture or an autotune at startup is not)."""
    return bool(signs.get("deepgemm-jit") or signs.get("torch-compile"))


def _all_warmup(records: Sequence[RequestRecord], signs: dict[str, int],
                pace: float | None, tolerance: float = 0.0) -> Found:
    """The whole step was warm-up: cut at its end, so no steady window is found."""
    first = min((r.start_ns for r in records), default=0)
    end = max((r.end_ns for r in records), default=first)
    return Found(Warmup(detected=True, converged=False, requests=len(records),
                        seconds=(end - first) / 1e9, signs=signs, warm_tpot_ms=pace,
                        tolerance=tolerance), end)


def with_log_signs(metrics: StepMetrics, lines: Iterable[str]) -> StepMetrics:
    """A measured step with the warm-up lines its server logged meanwhile (read after the
    engine judged it from its records alone): the signs are added to its warm-up, and a step
    with runtime compiles but no convergence found becomes all warm-up (as `detect` rules)."""
    signs = log_signs(lines)
    found, steady = metrics.warmup, metrics.steady
    if not signs or found is None or steady is None:
        return metrics
    if found.detected or not _compiled(signs):
        return metrics.model_copy(update={"warmup": found.model_copy(update={"signs": signs})})
    warmup = Warmup(detected=True, converged=False, signs=signs, seconds=steady.step_s,
                    requests=metrics.completed + metrics.errors + metrics.incomplete,
                    warm_tpot_ms=found.steady_tpot_ms, tolerance=found.tolerance)
    unsteady = SteadyState(ratio=steady.ratio, threshold=steady.threshold, reached=False,
                           step_s=steady.step_s)
    return metrics.model_copy(update={"warmup": warmup, "steady": unsteady})


def steady_after_warmup(
    records: Sequence[RequestRecord],
    concurrency: int,
    *,
    ratio: float = DEFAULT_RATIO,
    step_window: tuple[int, int] | None = None,
    log_lines: Iterable[str] = (),
) -> tuple[SteadyState, Warmup]:
    """The step's steady state with any warm-up left out, and the warm-up."""
    found = detect(records, concurrency, log_lines)
    steady = steady_state(records, concurrency, ratio=ratio, step_window=step_window,
                          not_before_ns=found.cut_ns)
    return steady, found.warmup


RunRound = Callable[[int, int], Awaitable[StepMetrics]]
"""(concurrency, prompts) -> the metrics of one round of warm-up load."""


def load_shape(load: WarmupLoad, levels: Sequence[int]) -> tuple[int, int]:
    """(concurrency, prompts per round) of a sweep's warm-up load."""
    concurrency = load.concurrency or min(max(levels, default=1), 32)
    return concurrency, load.prompts or 2 * concurrency


async def warm_up(run_round: RunRound, load: WarmupLoad, levels: Sequence[int],
                  now: Callable[[], float]) -> Warmup:
    """Load the server in rounds until its latency converged (WarmupLoad says when), and
    what that took: the requests sent, the seconds by `now`, the log's signs seen in rounds."""
    concurrency, prompts = load_shape(load, levels)
    started, sent, before = now(), 0, None
    signs: Counter[str] = Counter()
    paces: list[float] = []
    converged = False
    for _ in range(load.max_rounds):
        metrics = await run_round(concurrency, prompts)
        sent += metrics.completed + metrics.errors + metrics.incomplete
        found = metrics.warmup
        if found is not None:
            signs.update(found.signs)
        pace = metrics.tpot_ms.p50
        if pace is not None:
            paces.append(pace)
        settled = found is not None and not found.detected
        if settled and pace is not None and before is not None \
                and abs(pace - before) <= MIN_TOLERANCE * before:
            converged = True
            break
        before = pace
    return Warmup(detected=True, source="warm-up load", converged=converged, requests=sent,
                  seconds=now() - started, signs=dict(sorted(signs.items())),
                  warm_tpot_ms=paces[0] if paces else None,
                  steady_tpot_ms=paces[-1] if paces else None, tolerance=MIN_TOLERANCE)
