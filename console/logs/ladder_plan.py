"""A proposed decode CUDA-graph ladder, sized for the traffic a log shows, with its cost and
its predicted effect; every figure is the log's or derived from the log's in the words shown.

* Eager penalty, MEASURED on the same log: the step time of a Decode line is its batch x
  accept len (1 without speculative decoding) over its gen throughput (the interval's tokens
  over its seconds, metrics_reporter.py:942-944). Eager lines are compared with graph lines
  at the same batch sizes when both exist, else with graph lines just below the ceiling
  against eager ones just above it (within WINDOW of it): the penalty is the median of each
  eager step over the graph step time at its batch (a line fitted through the graph lines,
  when they hold two batch sizes or more; their median otherwise). Fewer than MIN_SAMPLES
  lines on either side: not measurable, and no gain is predicted.
* Proposal: the current ladder, plus SGLang's own sizes (console/sglang/graph_ladder.py)
  from the ceiling up to the largest batch the log shows (the traffic at and above the knee,
  where the eager lines are), capped by `max_running_requests` when the log states it.
* Memory: SGLang captures the largest size first and the smaller ones reuse its pool
  (decode_cuda_graph_runner.py:1324-1329), so the new capture's memory is estimated as the
  measured `mem usage` scaled by the new ceiling over the old; the budget is what the capture
  uses now plus a margin (MARGIN_KV_SHARE of the KV pool's GB, else MARGIN_SHARE of the
  capture's own use); a ceiling that does not fit is lowered to the largest that does.
* Capture time: the measured decode capture's seconds per size, times the new count.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence

from console.logs.ladder import (
    EagerPenalty,
    GainAt,
    Ladder,
    LadderProposal,
    LadderReader,
    StepSample,
)
from console.sglang.flags import flag_name
from console.sglang.graph_ladder import default_decode_ladder, padded_size

MIN_SAMPLES = 3
WINDOW = 0.25
MARGIN_KV_SHARE = 0.02
MARGIN_SHARE = 1.0


def eager_penalty(samples: Sequence[StepSample], ceiling: int | None) -> EagerPenalty:
    """Over the Decode lines whose interval holds no prefill, when both sides have enough of
    them; over all rate lines otherwise (and the words say which)."""
    clean = [s for s in samples if s.clean]
    found = _penalty(clean, ceiling)
    if found.measured:
        found.how += ", intervals without prefill"
        return found
    return _penalty(samples, ceiling)


def _penalty(samples: Sequence[StepSample], ceiling: int | None) -> EagerPenalty:
    graph = [s for s in samples if s.graph is True]
    eager = [s for s in samples if s.graph is False]
    if len(eager) < MIN_SAMPLES or len(graph) < MIN_SAMPLES:
        return EagerPenalty(how=f"not measurable: {len(eager)} eager and {len(graph)} graph "
                            f"Decode lines with a rate (at least {MIN_SAMPLES} each)")
    shared = {s.batch for s in graph} & {s.batch for s in eager}
    near_g = [s for s in graph if s.batch in shared]
    near_e = [s for s in eager if s.batch in shared]
    how = "same batch"
    if len(near_g) < MIN_SAMPLES or len(near_e) < MIN_SAMPLES:
        if ceiling is None:
            return EagerPenalty(how="not measurable: no captured ceiling to compare around")
        reach = max(2, int(ceiling * WINDOW))
        near_g = [s for s in graph if ceiling - reach <= s.batch <= ceiling]
        near_e = [s for s in eager if ceiling < s.batch <= ceiling + reach]
        how = "either side of the ceiling"
        if len(near_g) < MIN_SAMPLES or len(near_e) < MIN_SAMPLES:
            near_g, near_e = _nearest(graph, eager, ceiling)
            how = "nearest either side of the ceiling"
        if len(near_g) < MIN_SAMPLES or len(near_e) < MIN_SAMPLES:
            return EagerPenalty(how=f"not measurable: {len(near_g)} graph lines at "
                                f"{ceiling // 2}-{ceiling} and {len(near_e)} eager lines above "
                                f"{ceiling} (at least {MIN_SAMPLES} each)")
    graph_at = _graph_fit(near_g)
    ratios = [s.step_s / graph_at(s.batch) for s in near_e]
    ratio = statistics.median(ratios)
    deciles = statistics.quantiles(ratios, n=10, method="inclusive")
    g_ms = statistics.median(s.step_s for s in near_g) * 1000
    e_ms = statistics.median(s.step_s for s in near_e) * 1000
    return EagerPenalty(
        measured=True, ratio=ratio, ratio_low=deciles[0], ratio_high=deciles[-1],
        graph_fit_s=_fit(near_g),
        graph_step_ms=g_ms, eager_step_ms=e_ms,
        graph_samples=len(near_g), eager_samples=len(near_e),
        graph_batches=(min(s.batch for s in near_g), max(s.batch for s in near_g)),
        eager_batches=(min(s.batch for s in near_e), max(s.batch for s in near_e)), how=how)


def _nearest(graph: Sequence[StepSample], eager: Sequence[StepSample], ceiling: int
             ) -> tuple[list[StepSample], list[StepSample]]:
    """Traffic at sweep levels leaves the window empty (levels 24 and 32 around a ceiling of
    24): the graph lines in the upper half below the ceiling, and the eager lines of the
    smallest batches above it until MIN_SAMPLES are taken (the graph time is then read at each
    eager line's own batch off the line fitted through the graph lines)."""
    near_g = [s for s in graph if ceiling // 2 <= s.batch <= ceiling]
    near_e: list[StepSample] = []
    for batch in sorted({s.batch for s in eager if s.batch > ceiling}):
        near_e += [s for s in eager if s.batch == batch]
        if len(near_e) >= MIN_SAMPLES:
            break
    return near_g, near_e


def _fit(graph: Sequence[StepSample]) -> tuple[float, float]:
    """(intercept, slope): the least-squares line through the graph lines' step seconds by
    batch when they hold two batch sizes or more and it rises (a step grows with its batch: an
    eager line at a larger batch than the graph lines is compared with the graph time at its
    own batch); else their median, flat."""
    median = statistics.median(s.step_s for s in graph)
    if len({s.batch for s in graph}) < 2:
        return median, 0.0
    slope, intercept = statistics.linear_regression([float(s.batch) for s in graph],
                                                    [s.step_s for s in graph])
    return (intercept, slope) if slope > 0 else (median, 0.0)


def _graph_fit(graph: Sequence[StepSample]) -> Callable[[int], float]:
    """The graph step seconds at a batch (_fit), never below the smallest graph step seen."""
    intercept, slope = _fit(graph)
    floor = min(s.step_s for s in graph)
    return lambda batch: max(floor, intercept + slope * batch)


def version_basis(ladder: Ladder, version: str | None = None) -> str:
    """The SGLang release whose flag names the proposal uses: the host's when known, else the
    capture wording's era (old wording: before the per-phase flags of PR #23906)."""
    if version:
        return version
    return "0.4.10" if ladder.capture_wording == "old" else "0.5.23"


def propose(ladder: Ladder, samples: Sequence[StepSample], *, version: str | None = None,
            budget_gb: float | None = None) -> LadderProposal | None:
    """None when there is nothing to propose: no ladder, or every batch already fits."""
    if not ladder.ladder or ladder.max_batch is None or ladder.ceiling is None:
        return None
    target = ladder.max_batch
    if ladder.max_running_requests:
        target = min(target, ladder.max_running_requests)
    if target <= ladder.ceiling:
        return None
    penalty = eager_penalty(samples, ladder.ceiling)
    budget, rule = _budget(ladder, budget_gb)
    ceiling = target
    estimate = _memory_at(ladder, ceiling)
    notes: list[str] = []
    if budget is not None and estimate is not None and estimate > budget:
        fitting = [s for s in _candidates(ladder, target)
                   if (_memory_at(ladder, s) or 0.0) <= budget]
        if not fitting:
            return None
        ceiling = fitting[-1]
        estimate = _memory_at(ladder, ceiling)
        notes.append(f"the budget caps the ceiling at {ceiling} (the traffic reaches {target})")
    added = _candidates(ladder, ceiling)
    sizes = sorted(set(ladder.ladder) | set(added))
    return _proposal(ladder, samples, penalty, sizes, added, target, estimate, budget, rule,
                     notes, version_basis(ladder, version))


def _candidates(ladder: Ladder, top: int) -> list[int]:
    assert ladder.ceiling is not None
    return [s for s in default_decode_ladder(top, speculative=ladder.speculative)
            if s > ladder.ceiling]


def _budget(ladder: Ladder, budget_gb: float | None) -> tuple[float | None, str]:
    memory = ladder.memory
    if budget_gb is not None:
        return budget_gb, f"{budget_gb:g} GB (as set)"
    if memory is None or memory.mem_gb is None:
        return None, "no budget: the log prints no capture memory"
    if memory.kv_gb_per_token is not None and memory.kv_tokens is not None:
        pool_gb = _pool_gb(ladder)
        if pool_gb is not None:
            margin = pool_gb * MARGIN_KV_SHARE
            return memory.mem_gb + margin, (
                f"current capture {memory.mem_gb:g} GB + {MARGIN_KV_SHARE:.0%} of the "
                f"{pool_gb:.2f} GB KV pool")
    return memory.mem_gb * (1 + MARGIN_SHARE), (
        f"current capture {memory.mem_gb:g} GB + {MARGIN_SHARE:.0%}")


def _pool_gb(ladder: Ladder) -> float | None:
    memory = ladder.memory
    if memory is None or memory.kv_gb_per_token is None or ladder.kv_pool_tokens is None:
        return None
    return memory.kv_gb_per_token * ladder.kv_pool_tokens


def _memory_at(ladder: Ladder, ceiling: int) -> float | None:
    memory = ladder.memory
    if memory is None or memory.mem_gb is None or not ladder.ceiling:
        return None
    return memory.mem_gb * ceiling / ladder.ceiling


def _proposal(ladder: Ladder, samples: Sequence[StepSample], penalty: EagerPenalty,
              sizes: list[int], added: list[int], target: int, estimate: float | None,
              budget: float | None, rule: str, notes: list[str], basis: str
              ) -> LadderProposal:
    covered = moved = slots = padded = 0
    for row in ladder.histogram:
        runs = padded_size(row.batch, sizes)
        if runs is None:
            continue
        covered += row.lines
        slots += (runs - row.batch) * row.lines
        padded += runs * row.lines
        if ladder.ceiling is not None and row.batch > ladder.ceiling:
            moved += row.eager
    bs_flag = flag_name("--cuda-graph-bs-decode", basis)
    max_flag = flag_name("--cuda-graph-max-bs-decode", basis)
    default = default_decode_ladder(sizes[-1], speculative=ladder.speculative)
    proposal = LadderProposal(
        change={max_flag.removeprefix("--"): sizes[-1]}, change_is_sizes=default == sizes,
        sizes=sizes, added=added, version_basis=basis, target=target, ceiling=sizes[-1],
        flags=[f"{bs_flag} {' '.join(str(s) for s in sizes)}", f"{max_flag} {sizes[-1]}"],
        covered_lines=covered, coverage=covered / ladder.decode_lines if ladder.decode_lines
        else 0.0, moved_lines=moved, padding_waste=slots / padded if padded else None,
        memory_gb=None if estimate is None else round(estimate, 3),
        memory_budget_gb=None if budget is None else round(budget, 3), budget_rule=rule,
        notes=notes)
    memory = ladder.memory
    if memory is not None and estimate is not None and memory.mem_gb is not None \
            and memory.kv_gb_per_token:
        proposal.kv_tokens_cost = int(max(0.0, estimate - memory.mem_gb)
                                      / memory.kv_gb_per_token)
    count = ladder.ladder and len(ladder.ladder)
    if memory is not None and memory.capture_s is not None and count:
        proposal.capture_s = round(memory.capture_s / count * len(sizes), 2)
    if not proposal.change_is_sizes:
        proposal.notes.append(f"{max_flag} {sizes[-1]} alone captures SGLang's default sizes "
                              f"to {sizes[-1]}, not exactly these: give {bs_flag} for them")
    if penalty.measured and penalty.ratio is not None:
        proposal.predicted_step_gain = penalty.ratio - 1
        if penalty.ratio_low is not None and penalty.ratio_high is not None:
            proposal.predicted_step_gain_range = (penalty.ratio_low - 1, penalty.ratio_high - 1)
        lines = [s for s in samples if s.graph is False and ladder.ceiling is not None
                 and ladder.ceiling < s.batch <= sizes[-1]]
        proposal.predicted_decode_gain = _gain(samples, lines, penalty, penalty.ratio)
        proposal.predicted_gain_at = _gains_at(lines, penalty)
    else:
        proposal.notes.append(f"no gain predicted: eager penalty {penalty.how}")
    return proposal


def _saved(line: StepSample, penalty: EagerPenalty, ratio: float) -> float:
    """The seconds a moved line's step saves: its eager decode step (ratio x the graph step at
    its batch) less the graph step; the rest of its interval (a prefill) stays."""
    assert penalty.graph_fit_s is not None
    intercept, slope = penalty.graph_fit_s
    graph_s = max(0.0, intercept + slope * line.batch)
    return min(line.step_s - graph_s, graph_s * (ratio - 1)) if line.step_s > graph_s else 0.0


def _gain(total_of: Sequence[StepSample], moved: Sequence[StepSample], penalty: EagerPenalty,
          ratio: float) -> float | None:
    """`total_of`'s time over what it would be with `moved`'s decode steps on graphs, - 1."""
    total = sum(s.step_s for s in total_of)
    saved = sum(_saved(s, penalty, ratio) for s in moved)
    return total / (total - saved) - 1 if total > saved > 0 else None


def _gains_at(moved: Sequence[StepSample], penalty: EagerPenalty) -> list[GainAt]:
    """Per batch size moved: the gain of its own lines' time, at the penalty's median and at
    its 10th and 90th percentile lines."""
    out = []
    for batch in sorted({s.batch for s in moved}):
        lines = [s for s in moved if s.batch == batch]
        gains = [_gain(lines, lines, penalty, r) for r in
                 (penalty.ratio, penalty.ratio_low, penalty.ratio_high) if r is not None]
        if len(gains) == 3 and all(g is not None for g in gains):
            mid, low, high = (g or 0.0 for g in gains)
            out.append(GainAt(batch=batch, lines=len(lines), gain=mid, low=low, high=high))
    return out


def plan(reader: LadderReader, *, version: str | None = None,
         budget_gb: float | None = None) -> Ladder:
    """The reader's ladder with its measured eager penalty and the proposal (if any)."""
    ladder = reader.result()
    samples = reader.samples()
    ladder.penalty = eager_penalty(samples, ladder.ceiling)
    ladder.proposal = propose(ladder, samples, version=version, budget_gb=budget_gb)
    return ladder
