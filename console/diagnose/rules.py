"""One rule per cause id: each reads the run's evidence and returns a Cause or None.

Each rule is registered with `@rule(id, checked=...)` (console/diagnose/registry.py), which
is the one place its id and what it checks are written. Cause ids are stable (scripts and the
console key on them). The mechanisms and their sources
are in shared/reference/plateau-causes.md. A rule's confidence is the share of the step's
throughput its mechanism explains, computed from the mechanism's own evidence (step times
from the Decode lines, clocks from the GPU telemetry, the client's record), and its suggestion
carries the gain that predicts (console/diagnose/effects.py; README "How confidence is
computed" lists the arithmetic per id). Rules look at the saturated region (the knee's step
and those after it) unless said otherwise.
"""

from __future__ import annotations

from typing import Any

from console.diagnose.effects import (
    Fit,
    batch_of,
    batch_share_range,
    decode_step_s,
    decode_wall_share,
    fit,
    gain_pct,
    median,
    share,
    throughput_share,
)
from console.diagnose.models import (
    Cause,
    ClientRecord,
    DecodePoint,
    EvidenceItem,
    GpuPoint,
    RunEvidence,
    StepEvidence,
    Suggestion,
)
from console.diagnose.presence import (
    decode_lines,
    held_on_node,
    pool_bound,
    presence,
    span,
    waiting_text,
    waits_for_pool,
)
from console.diagnose.registry import RULES, Context, rule
from console.diagnose.rule_parts import (
    ab_level,
    best_found,
    decode_share_of,
    eager_fraction,
    effect_item,
    effect_of,
    fit_for,
    fit_said,
    metric_share,
    ms_text,
    pct_text,
    predict,
    wall_said,
    window_text,
)
from console.logs.ladder import LadderProposal
from console.sglang import metrics_names as mn
from console.sglang.batch import KV_POOL_FULL, RETRACT_LINE
from console.sglang.flags import graph_max_bs_flag

# With decode CUDA graphs off there is no graph step to compare with: the launch-bound share
# of the batch-independent step time is taken as this (an estimate, said as one): Python
# launches every kernel of every layer, the rest of the fixed time is weight streaming and the
# scheduler (sglang#33483: eager steps 2-3x the graph ones at TP8).
EAGER_FIXED_SHARE = 0.6
EAGER_PRIOR_RANGE = (0.45, 0.75)  # the range that prior is stated with (an A/B lands inside)
# An untuned Triton MoE config: SGLang PR #33208 measured tuned kernels 1.6-15x faster on RTX
# PRO 6000 (flashinfer#3521: on H200, Triton ahead for bf16). 2x, near the low end, applied
# to the batch-independent (weight-streaming) time, is what the default config is taken to
# cost; only an A/B settles it.
MOE_UNTUNED_SPEEDUP = 2.0
MOE_SPEEDUP_RANGE = (1.6, 15.0)  # PR #33208's measured range: the prior's stated interval
# All-reduce latency per call inside a CUDA graph (plateau-causes.md "Multi-GPU
# communication"): one-shot custom all-reduce ~4 us; NCCL ring ~20 us at TP4 over PCIe, i.e.
# ~3.4 us per hop of its 2(tp-1); with NCCL_P2P_DISABLE=1 through host memory, the reference
# story's log (+126 ms per decode step at TP8, 61 layers) gives ~22x that.
ONE_SHOT_S = 4e-6
NCCL_HOP_S = 3.4e-6
HOST_MEMORY_FACTOR = 22.0
ALLREDUCE_PER_LAYER = 2
DEFAULT_LAYERS = 61  # when the model's layer count is not known (DeepSeek-V3 class)


# ------------------------------------------------------------------------------ graph


def ladder_said(proposal: LadderProposal) -> str:
    """The proposed ladder and what it costs, a clause each, each derived figure said so."""
    clauses = [f"proposed ladder: {len(proposal.sizes)} sizes to {proposal.sizes[-1]} "
               "(derived: SGLang's default sizes up to the largest batch, within the budget)",
               f"covers {proposal.coverage:.0%} of the Decode lines and moves "
               f"{proposal.moved_lines} eager lines to graphs (derived: counted on the lines)"]
    if proposal.memory_gb is not None:
        clauses.append(f"graph memory ~{proposal.memory_gb:.2f} GB (derived: the capture's "
                       "memory scaled by the new largest size, against a budget of "
                       f"{proposal.budget_rule})")
    if proposal.kv_tokens_cost is not None:
        clauses.append(f"{proposal.kv_tokens_cost:,} KV tokens (derived: the added memory over "
                       "the KV pool's GB per token)")
    if proposal.padding_waste is not None:
        clauses.append(f"padding waste {proposal.padding_waste:.1%} (derived: padded slots over "
                       "the lines' batches)")
    return "; ".join(clauses)


def graph_ceiling(ev: RunEvidence) -> int | None:
    facts = ev.startup
    if facts.capture_bs:
        return max(facts.capture_bs)
    return facts.cuda_graph_max_bs_decode


def _graph_excess(step: StepEvidence, ceiling: int, graph: Fit | None, by_lines: bool = False,
                  penalty: float | None = None) -> tuple[float, dict[str, Any]] | None:
    """Explained share of eager steps above the ceiling: (eager time - graph time at the
    same batch) x the share of eager lines, over the step's mean decode time. `penalty`: the
    eager penalty measured where the graph fit needs no reach (_eager_penalty), the most the
    step is charged: launch overhead does not grow with the batch, and far above the graph
    levels the fit misses what else lengthens a step (a queue's prefills), which both kinds
    of step pay."""
    eager = [p for p in step.decode if p.running > ceiling and p.cuda_graph is False]
    if not eager or len(eager) < 0.25 * len(step.decode):
        return None
    lines = len(step.decode)
    eager_share = len(eager) / lines
    # The step's typical decode round is an eager one when most lines are eager.
    # Against a fit on a log's lines, the eager lines' own time (like with like, not the
    # client's ITL from a run the lines were only matched to).
    t_eager = (decode_step_s(step, eager) if by_lines or eager_share < 0.5
               else decode_step_s(step))
    if t_eager is None:
        return None
    running = batch_of(eager)
    t_graph = min(t_eager, graph.at(running)) if graph is not None else t_eager / 2.0
    if penalty is not None:
        t_graph = max(t_graph, t_eager - penalty)
    mean = eager_share * t_eager + (1 - eager_share) * t_graph
    wall = decode_wall_share(step, mean, batch_of(step.decode))
    explained = share(eager_share * max(0.0, t_eager - t_graph), mean) * wall
    return explained, {"decode_wall_share": round(wall, 3),
                       "running_median": running, "eager_share": round(eager_share, 3),
                       "lines": lines, "eager_step_ms": round(t_eager * 1000, 1),
                       "graph_step_ms": round(t_graph * 1000, 1),
                       "graph_fit": graph is not None, "concurrency": step.concurrency}


def _eager_penalty(ctx: Context, ceiling: int, graph: Fit | None) -> float | None:
    """Eager step - graph step at the same batch, at the lowest mostly-eager level of a sweep
    (the graph fit's shortest reach); None from a log's lines or without a graph fit."""
    if ctx.lines or graph is None:
        return None
    for step in sorted(ctx.all, key=lambda s: (s.concurrency, s.index)):
        eager = [p for p in step.decode if p.running > ceiling and p.cuda_graph is False]
        if not eager or 2 * len(eager) < len(step.decode):
            continue
        t_eager = decode_step_s(step)
        if t_eager is not None:
            return max(0.0, t_eager - graph.at(batch_of(eager)))
    return None



def _ceiling_presence(ctx: Context, ceiling: int) -> Any:
    lines = decode_lines(ctx.all)
    above = [(s, p) for s, p in lines if p.running > ceiling and p.cuda_graph is False]
    return presence(above, len(lines), (
        f"{len(above)} of {len(lines)} Decode lines run eager (graph: False) at "
        f"#running-req {span(p.running for _, p in above)}, above the decode CUDA-graph "
        f"ceiling {ceiling}"))


def _graph_target(ctx: Context, step: StepEvidence, running: float) -> int:
    """The ceiling to capture up to: the offered top level of a sweep; of a log alone, the
    largest #running-req its lines print (a figure the log holds)."""
    if step.offered_known:
        return max(int(running), max(s.concurrency for s in ctx.all))
    return max(p.running for s in ctx.all for p in s.decode)


@rule("cuda-graph-ceiling",
      checked="Decode lines: #running-req vs the captured CUDA-graph batch sizes")
def cuda_graph_ceiling(ev: RunEvidence, ctx: Context) -> Cause | None:
    ceiling = graph_ceiling(ev)
    if ceiling is None or ev.startup.decode_graph_disabled:
        return None
    seen_lines = _ceiling_presence(ctx, ceiling)
    graph = ctx.graph_fit
    penalty = _eager_penalty(ctx, ceiling, graph)
    found = [(r[0], step, r[1]) for step in ctx.late
             if (r := _graph_excess(step, ceiling, graph, ctx.lines, penalty)) is not None]
    best = best_found(found)
    flag = graph_max_bs_flag(ev.startup.sglang_version).lstrip("-")
    title = "decode batch above the CUDA-graph ceiling runs eagerly"
    if best is None:
        # A sweep's levels that never run eager long enough say it costs nothing; a log's
        # lines that plainly do are named with the effect left to an A/B.
        if not ctx.lines or seen_lines is None or seen_lines.sure != "plain":
            return None
        top = max(p.running for s in ctx.all for p in s.decode)
        return Cause(id="cuda-graph-ceiling", title=title, confidence=0.0,
                     evidence=[EvidenceItem(source="Decode lines", text=seen_lines.text,
                                            values={"ceiling": ceiling})],
                     presence=seen_lines,
                     effect=effect_of(ctx, None, "unmeasurable", ab=(
                         f"A: as logged; B: --{flag} {top}, at the same load")),
                     suggest=Suggestion(flags={flag: top}, expect=(
                         "batches up to the largest #running-req in the log run in graphs")))
    explained, step, seen = best
    eager = [p for p in step.decode if p.running > ceiling and p.cuda_graph is False]
    evidence = [EvidenceItem(
        source="Decode lines",
        text=f"{window_text(step)}: #running-req {span(p.running for p in eager)} > "
             f"cuda-graph-max-bs-decode {ceiling}; graph: False in {len(eager)} of "
             f"{seen['lines']} lines",
        values={**{k: seen[k] for k in ("running_median", "eager_share", "lines",
                                         "concurrency")}, "ceiling": ceiling}),
        effect_item(step, explained,
                f"eager step {seen['eager_step_ms']:.0f} ms vs {seen['graph_step_ms']:.0f} ms "
                f"in a graph at the same batch ("
                + (fit_said(ctx, "graph") if seen["graph_fit"]
                   else "no graph line to fit: assumed half, derived") + ")"
                + wall_said(seen["decode_wall_share"]),
                eager_step_ms=seen["eager_step_ms"], graph_step_ms=seen["graph_step_ms"])]
    if ev.startup.capture_bs:
        evidence.append(EvidenceItem(
            source="startup log",
            text=f"decode CUDA graphs captured for bs {ev.startup.capture_bs[0]}.."
                 f"{max(ev.startup.capture_bs)} ({len(ev.startup.capture_bs)} sizes)",
            values={"capture_bs_max": max(ev.startup.capture_bs)}))
    zeros, scrapes = metric_share(step, mn.IS_CUDA_GRAPH, lambda v: v < 0.5)
    if scrapes:
        evidence.append(EvidenceItem(
            source="/metrics", text=f"{mn.IS_CUDA_GRAPH} 0 in {zeros} of {scrapes} scrapes",
            values={"zero": zeros, "scrapes": scrapes}))
    target = _graph_target(ctx, step, seen["running_median"])
    proposal = ctx.ladder.proposal if ctx.ladder is not None else None
    if proposal is not None and proposal.change_is_sizes and proposal.sizes[-1] >= target:
        # The ladder planned from the run's own batches, within its graph-memory budget
        # (console/logs/ladder_plan.py): the A/B and tune measure that one when it covers the
        # traffic (a budget that caps it below would make the A/B measure a partial fix).
        target = proposal.sizes[-1]
        evidence.append(EvidenceItem(source="ladder", text=ladder_said(proposal),
                                     values={"sizes": proposal.sizes,
                                             "memory_gb": proposal.memory_gb,
                                             "padding_waste": proposal.padding_waste}))
    gain, said = predict(explained, step, f"batches up to {target} ran in graphs")
    kind = None if seen["graph_fit"] else "prior"
    return Cause(
        id="cuda-graph-ceiling", title=title,
        confidence=round(explained, 3), evidence=evidence, presence=seen_lines,
        effect=effect_of(ctx, explained, kind,
                          ab=f"A: as run; B: --{flag} {target}, at the same load"),
        suggest=Suggestion(
            flags={flag: target}, gain_pct=gain, at_concurrency=ab_level(step),
            gain_kind="prediction" if kind is None else "prior",
            expect=f"{said}: the eager penalty goes"
                   + (" and throughput keeps rising past the knee" if step.offered_known else "")
                   + " (sglang#33483, PR #21005)"))


def _eager_seen(ev: RunEvidence, ctx: Context) -> tuple[Any, bool] | None:
    """(presence, everywhere): decode lines eager at every batch size, or eager at the top of
    the batch range although that size was captured (graphs not replayed)."""
    ceiling = graph_ceiling(ev)
    lines = decode_lines(ctx.all)
    inside = [(s, p) for s, p in lines if ceiling is None or p.running <= ceiling]
    eager = [(s, p) for s, p in inside if p.cuda_graph is False]
    everywhere = len(inside) >= 2 and eager_fraction([p for _, p in inside]) >= 0.9
    if ev.startup.decode_graph_disabled or everywhere:
        text = (f"graph: False in {len(eager)} of {len(inside)} Decode lines, "
                f"#running-req {span(p.running for _, p in inside)}")
        return presence(eager, len(inside), text) or presence(
            [(s, p) for s, p in lines], len(lines), "decode CUDA graphs disabled"), True
    if not ev.startup.capture_bs or not inside:
        return None
    top = max(p.running for _, p in inside)
    at_top = [(s, p) for s, p in inside if p.running >= 0.9 * top]
    eager_top = [(s, p) for s, p in at_top if p.cuda_graph is False]
    if len(eager_top) < 3 or 2 * len(eager_top) < len(at_top):
        return None
    text = (f"graph: False in {len(eager_top)} of {len(at_top)} Decode lines at "
            f"#running-req {span(p.running for _, p in at_top)}, sizes captured (bs "
            f"{span(ev.startup.capture_bs)}): the graphs are not replayed")
    return presence(eager_top, len(at_top), text, minimum=3), False


@rule("eager-decode",
      checked="Decode lines / flags: decode CUDA graphs in use")
def eager_decode(ev: RunEvidence, ctx: Context) -> Cause | None:
    seen = _eager_seen(ev, ctx)
    if seen is None:
        return None
    seen_lines, everywhere = seen
    eager = ctx.fit(False)
    found: list[tuple[float, StepEvidence, Any]] = []
    for step in ctx.late_decode if everywhere else []:
        seconds = decode_step_s(step)
        if seconds is None or eager is None:
            continue
        # The batch-independent time cannot exceed the step itself (a fit on few, noisy
        # points can put its intercept above it).
        fixed = min(eager.intercept, seconds)
        wall = decode_wall_share(step, seconds, batch_of(step.decode))
        found.append((share(EAGER_FIXED_SHARE * fixed, seconds) * wall, step,
                      (seconds, fixed, wall)))
    evidence = []
    if ev.startup.decode_graph_disabled:
        evidence.append(EvidenceItem(source="profile flags / server_info",
                                     text="decode CUDA graph disabled (--disable-cuda-graph or "
                                          "--cuda-graph-backend-decode disabled)",
                                     values={"disabled": True}))
    if seen_lines is not None:
        evidence.append(EvidenceItem(
            source="Decode lines", text=seen_lines.text,
            values={"eager_share": round(seen_lines.lines / max(1, seen_lines.of), 3),
                    "lines": seen_lines.of}))
    best = best_found(found)
    flags: dict[str, object] = {"cuda-graph-backend-decode": "full"}
    if "disable-cuda-graph" in ev.flags:
        flags["disable-cuda-graph"] = None
    title = "decode runs without CUDA graphs"
    ab = "A: as run; B: --cuda-graph-backend-decode full (graphs replayed), at the same load"
    if best is None or eager is None:
        return Cause(id="eager-decode", title=title, confidence=0.0, evidence=evidence,
                     presence=seen_lines, effect=effect_of(ctx, None, "unmeasurable", ab=ab),
                     suggest=Suggestion(flags=flags))
    explained, step, (seconds, fixed, wall) = best
    evidence.append(effect_item(
        step, explained, f"decode step {ms_text(seconds)}, of which {ms_text(fixed)} does "
                         f"not grow with the batch (derived: a fit of step time on batch); "
                         f"{EAGER_FIXED_SHARE:.0%} of that taken as launch-bound (a prior, "
                         "derived: no graph step to compare with)" + wall_said(wall),
        step_ms=round(seconds * 1000, 1), fixed_ms=round(fixed * 1000, 1)))
    gain, said = predict(explained, step, "every decode step replayed a graph")
    lo_share, hi_share = (share(k * fixed, seconds) * wall for k in EAGER_PRIOR_RANGE)
    low, high = gain_pct(lo_share), gain_pct(hi_share)
    return Cause(id="eager-decode", title=title,
                 confidence=round(explained, 3), evidence=evidence, presence=seen_lines,
                 effect=effect_of(ctx, explained, "prior", ab=ab, low=round(lo_share, 3),
                                   high=round(hi_share, 3)),
                 suggest=Suggestion(flags=flags, gain_pct=gain, at_concurrency=ab_level(step),
                                    gain_kind="prior", gain_low_pct=low, gain_high_pct=high,
                                    expect=f"{said}: lower per-step launch cost at every "
                                           f"concurrency (a prior: +{low:.0f}..+{high:.0f}%)"))


# ------------------------------------------------------------------------------ scheduler


def _offered(ctx: Context, step: StepEvidence) -> str:
    """The load a sweep offered, or the requests a log's lines hold."""
    if step.offered_known:
        return f"{step.concurrency} offered"
    return "held (#running-req + #queue-req)"


def _cap_lines(ctx: Context, cap: int) -> Any:
    lines = decode_lines(ctx.all)
    # A queue of a request or two at a closed-loop client's concurrency is arrival churn:
    # the queue must be a tenth of the batch (as inferred_facts asks of an inferred cap), on
    # a quarter of the lines or more.
    at_cap = [(s, p) for s, p in lines if p.running >= 0.95 * cap
              and p.queue >= max(2.0, 0.1 * cap) and not waits_for_pool(p, cap)]
    if 4 * len(at_cap) < len(lines):
        return None
    usages = [p.token_usage for _, p in at_cap if p.token_usage is not None]
    return presence(at_cap, len(lines), (
        f"{len(at_cap)} of {len(lines)} Decode lines hold #running-req "
        f"{span(p.running for _, p in at_cap)} at max_running_requests {cap} with #queue-req "
        f"{span(p.queue for _, p in at_cap)} waiting"
        + (f" and token usage {span(usages, '{:.2f}')} (room in the pool)" if usages else "")),
        minimum=3)


@rule("running-cap",
      checked="Decode lines: #running-req against max_running_requests, #queue-req")
def running_cap(ev: RunEvidence, ctx: Context) -> Cause | None:
    cap = ev.startup.max_running_requests
    if not cap:
        return None
    found: list[tuple[float, StepEvidence, Any]] = []
    for step in ctx.late:
        if step.concurrency <= cap or not step.decode:
            continue
        running = batch_of(step.decode)
        queue = median(p.queue for p in step.decode)
        if running < 0.95 * cap or queue <= 0:
            continue
        # A queue at a nearly full pool waits for KV tokens, not for the cap (kv-cache-full).
        if 2 * sum(1 for p in step.decode if waits_for_pool(p, cap)) > len(step.decode):
            continue
        bound = _eager_throughput_bound(ctx, step, running)
        low, explained, high = (0.0, bound, bound) if bound is not None else batch_share_range(
            running, step.concurrency, fit_for(ctx, step.decode), decode_share_of(step, running))
        found.append((explained, step, (running, queue, bound is not None, low, high)))
    best = best_found(found)
    seen_lines = _cap_lines(ctx, cap)
    if best is None:
        return None
    explained, step, (running, queue, is_bound, low, high) = best
    evidence = [EvidenceItem(
        source="Decode lines",
        text=f"{window_text(step)}: #running-req {span(p.running for p in step.decode)} at "
             f"max_running_requests {cap} while #queue-req {span(p.queue for p in step.decode)}",
        values={"running_median": running, "cap": cap, "queue_median": queue,
                "concurrency": step.concurrency}),
        effect_item(step, explained, f"requests wait in the queue ({_offered(ctx, step)}); "
                                 "decoding all of them (derived: step time vs batch fitted on "
                                 "the Decode lines of the same graph kind) would raise "
                                 "throughput")]
    reduced = ev.startup.running_cap_reduced_from
    flags: dict[str, object]
    if reduced:
        evidence.append(EvidenceItem(
            source="startup log",
            text=f"max_running_requests was reduced from the requested {reduced} to {cap} "
                 "(KV cache capacity)", values={"requested": reduced, "effective": cap}))
        flags = {"max-total-tokens": None} if "max-total-tokens" in ev.flags else {
            "mem-fraction-static": round(min(0.95, (ev.startup.mem_fraction_static or 0.85)
                                             + 0.05), 3)}
    else:
        flags = {"max-running-requests": max(s.concurrency for s in ctx.all)}
    condition = ("every offered request decoded" if step.offered_known else
                 "every request the lines hold decoded (the value: the most a line holds, "
                 "#running-req + #queue-req)")
    gain, said = predict(explained, step, condition)
    if is_bound:
        evidence.append(EvidenceItem(
            source="client", text="the batch runs eagerly here: throughput against batch "
            "extrapolated in a straight line over the eager levels' measured tok/s, an upper "
            "bound (throughput flattens as the batch grows)"))
    return Cause(id="running-cap", title="running requests held at the scheduler's cap",
                 confidence=round(explained, 3), evidence=evidence, presence=seen_lines,
                 effect=effect_of(ctx, explained, "bound" if is_bound else None,
                                   low=round(low, 3), high=round(high, 3), ab=(
                     f"A: as run; B: {', '.join(f'--{k} {v}' for k, v in flags.items())}, "
                     "at the same load")),
                 suggest=Suggestion(flags=flags, gain_pct=gain, at_concurrency=ab_level(step),
                                    gain_kind="bound" if is_bound else "prediction",
                                    gain_low_pct=gain_pct(low), gain_high_pct=gain_pct(high),
                                    expect=("up to " if is_bound else "")
                                    + f"{said}: #running-req follows the offered "
                                      f"concurrency past {cap}; #queue-req drains"))


def _eager_throughput_bound(ctx: Context, step: StepEvidence, running: float) -> float | None:
    """For a capped batch that runs eagerly (a graph ceiling below the cap): the share lost,
    from the measured throughput of the eager levels against their batch, extrapolated in a
    straight line to the offered load. An eager step's time fits badly on batch (a queue's
    prefills lengthen the capped level's steps), and one line through graph and eager levels
    hides the cap behind the ceiling; throughput flattens with the batch, so the straight
    line is an upper bound. None for a log's lines, a graph step, or fewer than two eager
    levels with a measured throughput."""
    if ctx.lines or eager_fraction(step.decode) < 0.5:
        return None
    pairs = [(batch_of(s.decode), s.client.total_tok_s) for s in ctx.all
             if s.decode and s.client is not None and s.client.total_tok_s
             and eager_fraction(s.decode) >= 0.5]
    if len({b for b, _ in pairs}) < 2:
        return None
    xs = [b for b, _ in pairs]
    ys = [float(t or 0.0) for _, t in pairs]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs)
    now = my + slope * (running - mx)
    offered = my + slope * (step.concurrency - mx)
    if slope <= 0 or now <= 0 or offered <= now:
        return 0.0
    return min(0.99, 1.0 - now / offered)


def _pool_lines(ctx: Context, cap: int | None) -> Any:
    lines = decode_lines(ctx.all)
    waiting = [(s, p) for s, p in lines if waits_for_pool(p, cap)]
    usages = [p.token_usage or 0.0 for _, p in waiting]
    retracts = sum(s.retract_lines for s in ctx.all)
    why = ("no room in the pool for one more request of the running ones' size"
           if all(pool_bound(p) for _, p in waiting) else
           f"held below max_running_requests {cap}: the pool's reservation for the running "
           "requests' remaining tokens holds admission")
    text = (f"{len(waiting)} of {len(lines)} Decode lines at token usage "
            f"{span(usages, '{:.2f}')} with {waiting_text(p for _, p in waiting)} "
            f"waiting (#running-req {span(p.running for _, p in waiting)}: {why})")
    if not waiting and retracts:
        steps = [s for s in ctx.all if s.retract_lines]
        return presence([(s, DecodePoint(0, 0)) for s in steps for _ in range(s.retract_lines)],
                        retracts, f"{retracts} '{RETRACT_LINE}' lines",
                        minimum=1)
    seen = presence(waiting, len(lines), text)
    if seen is not None and retracts:
        seen = seen.model_copy(update={
            "sure": "plain", "text": seen.text + f"; {retracts} retraction lines"})
    return seen


def _kv_flags(ev: RunEvidence) -> dict[str, object]:
    """An explicit --max-total-tokens caps the pool whatever its dtype: lifting it is the fix
    (fp8 KV cannot act on it)."""
    if "max-total-tokens" in ev.flags or ev.startup.max_total_tokens:
        return {"max-total-tokens": None}
    if "mem-fraction-static" in ev.flags or (ev.startup.kv_cache_dtype or "auto") not in (
            "auto", "bf16", "bfloat16"):
        return {"mem-fraction-static": round(min(0.95, (ev.startup.mem_fraction_static or 0.85)
                                                 + 0.1), 3)}
    return {"kv-cache-dtype": "fp8_e4m3"}


@rule("kv-cache-full",
      checked=f"token usage, '{KV_POOL_FULL}' lines")
def kv_cache_full(ev: RunEvidence, ctx: Context) -> Cause | None:
    found: list[tuple[float, StepEvidence, Any]] = []
    for step in ctx.late:
        waiting = [p for p in step.decode if waits_for_pool(p, ev.startup.max_running_requests)]
        if not step.retract_lines and (not waiting or 2 * len(waiting) < len(step.decode)):
            continue
        running = batch_of(step.decode) if step.decode else 0.0
        held = held_on_node(step)
        cap = ev.startup.max_running_requests or held
        low, explained, high = batch_share_range(running, min(held, cap),
                                                 fit_for(ctx, step.decode),
                                                 decode_share_of(step, running))
        # Each retracted request is prefilled again: its decoded tokens are recomputed.
        client = step.client
        if step.retracted_reqs and client is not None and client.completed:
            explained = min(0.99, explained + 0.5 * step.retracted_reqs / (
                client.completed + step.retracted_reqs) * (1 - explained))
        usages = [p.token_usage for p in step.decode if p.token_usage is not None]
        found.append((explained, step, (max(usages, default=0.0), running, low, high)))
    best = best_found(found)
    seen_lines = _pool_lines(ctx, ev.startup.max_running_requests)
    flags = _kv_flags(ev)
    title = "KV cache pool full: requests wait or are retracted"
    ab = f"A: as run; B: {', '.join(f'--{k} {v}' for k, v in flags.items())}, same load"
    if best is None:
        if not ctx.lines or seen_lines is None or seen_lines.sure != "plain":
            return None
        return Cause(id="kv-cache-full", title=title, confidence=0.0,
                     evidence=[EvidenceItem(source="Decode lines", text=seen_lines.text)],
                     presence=seen_lines, effect=effect_of(ctx, None, "unmeasurable", ab=ab),
                     suggest=Suggestion(flags=flags, expect="more KV tokens, no retractions"))
    explained, step, (peak, running, low, high) = best
    evidence = [EvidenceItem(
        source="Decode lines",
        text=f"{window_text(step)}: token usage up to {peak:.2f}, #running-req "
             f"{span(p.running for p in step.decode)}, {waiting_text(step.decode)}"
             + (f" of {step.concurrency} offered" if step.offered_known else ""),
        values={"token_usage_max": peak, "running_median": running})]
    if step.retract_lines:
        evidence.insert(0, EvidenceItem(
            source="log warnings",
            text=f"{step.retract_lines} '{RETRACT_LINE}' lines, "
                 f"{step.retracted_reqs} requests retracted",
            values={"retract_lines": step.retract_lines, "retracted_reqs": step.retracted_reqs}))
    evidence.append(effect_item(step, explained, "a full pool holds the running batch below the "
                                             "load (and re-prefills retracted requests)"))
    if ev.startup.max_total_num_tokens:
        evidence.append(EvidenceItem(source="startup log",
                                     text=f"max_total_num_tokens={ev.startup.max_total_num_tokens}",
                                     values={"max_total_num_tokens":
                                             ev.startup.max_total_num_tokens}))
    gain, said = predict(explained, step, "the pool held every request")
    return Cause(id="kv-cache-full", title=title,
                 confidence=round(explained, 3), evidence=evidence, presence=seen_lines,
                 effect=effect_of(ctx, explained, ab=ab, low=round(low, 3),
                                   high=round(high, 3)),
                 suggest=Suggestion(flags=flags, gain_pct=gain, at_concurrency=ab_level(step),
                                    gain_low_pct=gain_pct(low), gain_high_pct=gain_pct(high),
                                    expect=f"{said}: more KV tokens, no retractions"))


def _stall(step: StepEvidence, chunk: int) -> tuple[float, dict[str, Any]] | None:
    """Share of the running requests' decode time spent waiting for long prefills: the stall
    share of ITL (mean, or TPOT, over p50: the typical gap is a pure decode step) times the
    share of prefills run while requests decode that are long (#new-token >= half the chunk
    size): the stalls a smaller chunk decoded inside (the suggestion) shortens. Short
    prefills of new requests stall too, but no flag removes that (continuous batching)."""
    client = step.client
    mixed = [p for p in step.prefill if p.running > 0]
    if not mixed or client is None or not client.itl_p50_ms:
        return None
    mean = client.itl_mean_ms or client.tpot_mean_ms
    if not mean or mean <= client.itl_p50_ms:
        return None
    long = [p for p in mixed if p.new_token >= chunk / 2]
    stalled = share(mean - client.itl_p50_ms, mean) * len(long) / len(mixed)
    return stalled, {"mixed_prefills": len(mixed), "long_prefills": len(long),
                     "new_token_median": median(p.new_token for p in mixed),
                     "running_median": median(p.running for p in mixed),
                     "itl_mean_ms": round(mean, 1), "itl_p50_ms": round(client.itl_p50_ms, 1),
                     "itl_p99_ms": client.itl_p99_ms, "tpot_mean_ms": client.tpot_mean_ms}


@rule("prefill-interference",
      checked="Prefill lines during decode, client ITL mean vs p50")
def prefill_interference(ev: RunEvidence, ctx: Context) -> Cause | None:
    chunk = ev.startup.chunked_prefill_size or 8192
    found = [(r[0], step, r[1]) for step in ctx.late
             if (r := _stall(step, chunk)) is not None]
    best = best_found(found)
    if best is None:
        return None
    explained, step, seen = best
    return Cause(
        id="prefill-interference", title="prefill chunks stall the running decode batch",
        confidence=round(explained, 3),
        evidence=[
            EvidenceItem(source="Prefill lines",
                         text=f"{window_text(step)}: {seen['mixed_prefills']} prefill batches "
                              "while "
                              f"#running-req > 0 (median {seen['running_median']:.0f}), "
                              f"{seen['long_prefills']} of them >= half a chunk, "
                              f"#new-token median {seen['new_token_median']:.0f} "
                              f"(chunked_prefill_size {chunk})",
                         values={"mixed_prefills": seen["mixed_prefills"],
                                 "long_prefills": seen["long_prefills"],
                                 "new_token_median": seen["new_token_median"], "chunk": chunk}),
            EvidenceItem(source="client",
                         text=f"ITL mean {seen['itl_mean_ms']:.0f} ms vs p50 "
                              f"{seen['itl_p50_ms']:.0f} ms (p99 "
                              f"{seen['itl_p99_ms'] or 0:.0f} ms): the running requests wait "
                              f"{pct_text(explained)} of their decode time for long prefills "
                              "(per-request latency, not the server's throughput)",
                         values={k: seen[k] for k in ("itl_mean_ms", "itl_p50_ms",
                                                      "itl_p99_ms", "tpot_mean_ms")}),
        ],
        effect=effect_of(ctx, explained, "latency", ab=(
            "A: as run; B: the suggested chunking, at the same load: compare ITL mean and "
            "total tok/s")),
        suggest=_shorter_stalls(ev, chunk, explained, step))


def _shorter_stalls(ev: RunEvidence, chunk: int, explained: float,
                    step: StepEvidence) -> Suggestion:
    """SGLang runs prefill first and continues a chunked prompt in the next round, so the
    running batch decodes between chunks only with --enable-mixed-chunk (scheduler.py
    `get_next_batch_to_run`, `mix_with_running`); then the chunk size bounds the stall."""
    mixed = bool(ev.startup.enable_mixed_chunk or ev.flags.get("enable-mixed-chunk"))
    flags: dict[str, Any] = {"chunked-prefill-size": max(512, chunk // 4)}
    if not mixed:
        flags = {"enable-mixed-chunk": True, **flags}
    # A latency prediction: the running requests stop waiting for long prefills, but the
    # prefill compute stays, so total throughput need not rise (at long prompts it is the
    # prefill that bounds it: the A/B measured it fall).
    # The stalls left are a smaller chunk's: the predicted fall is the stall share times the
    # part of the chunk the change removes.
    smaller = flags["chunked-prefill-size"]
    itl = -round(explained * (1.0 - smaller / chunk) * 100.0, 1) if chunk > smaller else -round(
        explained * 100.0, 1)
    return Suggestion(flags=flags, at_concurrency=ab_level(step), itl_change_pct=itl,
                      expect=f"ITL mean {itl:.0f}% if the running batch decoded inside each "
                             "chunk (a latency prediction, not a throughput one: total tok/s "
                             "may fall where prefill compute bounds it; TTFT rises a little)")


# ------------------------------------------------------------------------------ hardware


def _allreduce_s(tp: int, path: str) -> float:
    if path == "custom":
        return ONE_SHOT_S
    hop = NCCL_HOP_S * 2 * (tp - 1)
    return hop * (HOST_MEMORY_FACTOR if path == "nccl-host" else 1.0)


def _paths(ev: RunEvidence, tp: int) -> tuple[str, str, Suggestion]:
    """(the path the all-reduce takes now, the one the suggestion gives, the suggestion).
    SGLang keeps its custom all-reduce only with NVLink or at most two PCIe ranks
    (custom_all_reduce.py: "not supported on more than two PCIe-only GPUs")."""
    nvlink = bool(ev.topology.nvlink)
    p2p_off = ev.env.get("NCCL_P2P_DISABLE", "").strip() in ("1", "true", "yes")
    custom_off = bool(ev.startup.disable_custom_all_reduce or ev.flags.get(
        "disable-custom-all-reduce"))
    custom_ok = nvlink or tp <= 2
    now = "custom" if custom_ok and not custom_off else (
        "nccl-host" if p2p_off and not nvlink else "nccl")
    if now == "nccl-host":
        return now, "custom" if custom_ok else "nccl", Suggestion(
            env={"NCCL_P2P_DISABLE": None},
            expect="all-reduce over PCIe P2P instead of host memory")
    if custom_off and custom_ok:
        return now, "custom", Suggestion(flags={"disable-custom-all-reduce": None},
                                         expect="the one-shot custom all-reduce")
    return now, now, Suggestion(flags={"tp-size": tp // 2, "dp-size": 2},
                                expect="half the ranks per all-reduce; two replicas")


@rule("tp-allreduce-pcie",
      checked="topology (NVLink), TP size, NCCL env, custom all-reduce, step time")
def tp_allreduce_pcie(ev: RunEvidence, ctx: Context) -> Cause | None:
    tp = ev.startup.tp_size or int(ev.flags.get("tp-size", 1) or 1)
    if tp <= 2:
        return None
    now, fixed, suggest = _paths(ev, tp)
    if now == "custom":
        return None
    layers = ev.startup.num_layers or DEFAULT_LAYERS
    calls = ALLREDUCE_PER_LAYER * layers
    # A structural cost (TP over PCIe) is measured against the one-shot path it cannot use.
    against = "custom" if fixed == now else fixed
    # The probe runs NCCL as the host has it (P2P): it stands for the `nccl` path only.
    measured = ev.topology.allreduce_us.get(tp) if now == "nccl" else None
    per_call = _allreduce_s(tp, now) if measured is None else measured * 1e-6
    implied = calls * (per_call - _allreduce_s(tp, against))
    model = ctx.graph_fit or ctx.any_fit
    found: list[tuple[float, StepEvidence, Any]] = []
    for step in ctx.late:
        seconds = decode_step_s(step)
        if seconds is None or model is None:
            continue
        # All-reduce latency does not grow with the batch: it is bounded by the fit's
        # batch-independent time, whatever the model implies.
        excess = min(implied, 0.9 * model.intercept)
        found.append((share(excess, seconds), step, (seconds, excess)))
    where = ("no NVLink in the topology" if ev.topology.nvlink is False else
             "NVLink" if ev.topology.nvlink else "NVLink not seen")
    evidence = [EvidenceItem(source="topology",
                             text=f"TP{tp} ({where}): all-reduce path {now}",
                             values={"tp": tp, "nvlink": ev.topology.nvlink})]
    if "NCCL_P2P_DISABLE" in suggest.env:
        evidence.append(EvidenceItem(source="profile env",
                                     text="NCCL_P2P_DISABLE=1: all-reduce traffic goes through "
                                          "host memory", values={"NCCL_P2P_DISABLE": "1"}))
    if "disable-custom-all-reduce" in suggest.flags:
        evidence.append(EvidenceItem(source="profile flags", text="--disable-custom-all-reduce",
                                     values={"disable_custom_all_reduce": True}))
    best = best_found(found)
    if best is None:
        return Cause(id="tp-allreduce-pcie", title=_allreduce_title(now, ev),
                     confidence=0.0, evidence=evidence, suggest=suggest,
                     effect=effect_of(ctx, None, "unmeasurable", ab=(
                         "A: as run; B: the suggested all-reduce path, at the same load")))
    explained, step, (seconds, excess) = best
    evidence.append(effect_item(
        step, explained, f"{calls} all-reduces per step at {per_call * 1e6:.0f} us "
                         f"({now}) vs {_allreduce_s(tp, against) * 1e6:.0f} us ({against}): "
                         f"{ms_text(excess)} of a {ms_text(seconds)} decode step (bounded by the "
                         f"{ms_text(model.intercept if model else 0.0)} that does not grow with "
                         f"the batch); {_latency_source(measured is not None)}",
        allreduce_ms=round(excess * 1000, 2), step_ms=round(seconds * 1000, 1)))
    gain, said = predict(explained, step, f"the all-reduce ran {against}")
    return Cause(id="tp-allreduce-pcie", title=_allreduce_title(now, ev),
                 confidence=round(explained, 3), evidence=evidence,
                 effect=effect_of(ctx, explained, "prior", ab=(
                     "A: as run; B: the suggested all-reduce path, at the same load (or an "
                     "all-reduce probe: nccl-tests all_reduce_perf at 8 KB)")),
                 suggest=suggest.model_copy(update={
                     "gain_pct": gain, "at_concurrency": ab_level(step), "gain_kind": "prior",
                     "expect": f"{said} (a prior): {suggest.expect}"}))


def _latency_source(measured: bool) -> str:
    if measured:
        return ("the per-call latency was measured on this host by the all-reduce probe "
                "(NCCL at the decode message); the one-shot figure is a prior "
                f"({ONE_SHOT_S * 1e6:g} us)")
    return (f"the per-call latencies are priors (one-shot {ONE_SHOT_S * 1e6:g} us, NCCL "
            f"{NCCL_HOP_S * 1e6:g} us per hop, x{HOST_MEMORY_FACTOR:g} through host memory), "
            "not measured here")


def _allreduce_title(path: str, ev: RunEvidence) -> str:
    if ev.topology.nvlink:
        return "tensor-parallel all-reduce through NCCL instead of the custom all-reduce"
    return "tensor-parallel all-reduce over PCIe" + (
        " through host memory" if path == "nccl-host" else "")


def _busy(ctx: Context) -> list[tuple[StepEvidence, GpuPoint]]:
    return [(s, g) for s in ctx.late for g in s.gpu if (g.util or 0) > 5]


def _clock_effect(ctx: Context, reason: str) -> tuple[float, StepEvidence, Any] | None:
    """Per late step: the share of busy samples slowed for `reason` x (1 - their SM clock /
    max). Compute terms stretch by max/clock; weight streaming does not, so this is an upper
    bound of the step-time effect (said as one)."""
    found: list[tuple[float, StepEvidence, Any]] = []
    for step in ctx.late:
        busy = [g for g in step.gpu if (g.util or 0) > 5]
        # A sample slowed for heat is thermal's: its clock drop is not the power limit's.
        slowed = [g for g in busy if any(reason in r for r in g.reasons)
                  and (reason == "thermal" or not any("thermal" in r for r in g.reasons))]
        if not busy or len(slowed) < 0.3 * len(busy):
            continue
        ratios = [g.sm_clock_mhz / g.sm_clock_max_mhz for g in slowed
                  if g.sm_clock_mhz and g.sm_clock_max_mhz]
        if not ratios:
            continue
        clock = median(ratios)
        slowed_share = len(slowed) / len(busy)
        found.append((share(slowed_share * (1.0 - clock), 1.0), step, (slowed, slowed_share,
                                                                      clock)))
    return best_found(found)


@rule("power-cap",
      checked="GPU telemetry: SW power cap reason with the SM clock drop")
def power_cap(ev: RunEvidence, ctx: Context) -> Cause | None:
    best = _clock_effect(ctx, "power")
    if best is None:
        return None
    explained, step, (capped, capped_share, clock) = best
    power = median(g.power_w or 0.0 for g in capped)
    limit = median(g.power_limit_w or 0.0 for g in capped)
    mhz = median(g.sm_clock_mhz or 0.0 for g in capped)
    top = median(g.sm_clock_max_mhz or 0.0 for g in capped)
    gain, said = predict(explained, step, "SM clocks stayed at their maximum")
    return Cause(
        id="power-cap", title="GPUs held at their power limit; SM clocks fall",
        confidence=round(explained, 3),
        evidence=[EvidenceItem(
            source="GPU telemetry",
            text=f"{window_text(step)}: sw power cap in {pct_text(capped_share)} of busy samples; "
                 f"power {power:.0f} W of {limit:.0f} W limit; SM clock {mhz:.0f} of "
                 f"{top:.0f} MHz",
            values={"capped_share": round(capped_share, 3), "power_w": power,
                    "power_limit_w": limit, "sm_clock_mhz": mhz, "sm_clock_max_mhz": top}),
            effect_item(step, explained, f"clock at {pct_text(clock)} of its maximum in the capped "
                                     "samples (upper bound: weight streaming does not slow)",
                    clock_ratio=round(clock, 3))],
        effect=effect_of(ctx, explained, "bound", low=0.0, high=round(explained, 3),
                          ab="A: as run; B: the board's default power limit, same load"),
        suggest=Suggestion(host="raise the board power limit (nvidia-smi -pl) or check cooling",
                           gain_pct=gain, at_concurrency=ab_level(step), gain_kind="bound",
                           gain_low_pct=0.0, gain_high_pct=gain,
                           expect=f"up to {said} (an upper bound): compute terms faster"))


@rule("thermal",
      checked="GPU telemetry: thermal slowdown reasons with the SM clock drop")
def thermal(ev: RunEvidence, ctx: Context) -> Cause | None:
    best = _clock_effect(ctx, "thermal")
    if best is None:
        return None
    explained, step, (hot, hot_share, clock) = best
    temp = max(g.temp_c or 0.0 for g in hot)
    gain, said = predict(explained, step, "the GPUs ran cool enough")
    return Cause(id="thermal", title="GPUs slow down for temperature",
                 confidence=round(explained, 3),
                 evidence=[EvidenceItem(
                     source="GPU telemetry",
                     text=f"{window_text(step)}: thermal slowdown in {pct_text(hot_share)} of busy "
                          f"samples; up to {temp:.0f} C",
                     values={"thermal_share": round(hot_share, 3), "temp_max": temp}),
                     effect_item(step, explained, f"clock at {pct_text(clock)} of its maximum "
                                                  "while slowed (upper bound)",
                             clock_ratio=round(clock, 3))],
                 effect=effect_of(ctx, explained, "bound", low=0.0,
                                   high=round(explained, 3),
                                   ab="A: as run; B: cooler intake air, same load"),
                 suggest=Suggestion(host="check airflow and fan curves; lower the power limit",
                                    gain_pct=gain, at_concurrency=ab_level(step), gain_kind="bound",
                                    gain_low_pct=0.0, gain_high_pct=gain,
                                    expect=f"up to {said} (an upper bound): clocks stay at "
                                           "their maximum under load"))


@rule("moe-untuned",
      checked="startup log: 'Using default MoE kernel config' warning, step time")
def moe_untuned(ev: RunEvidence, ctx: Context) -> Cause | None:
    warning = ev.startup.moe_untuned_warning
    seen = any("moe-default-config" in s.warnings for s in ctx.all)
    if not warning and not seen:
        return None
    backend = ev.startup.moe_runner_backend or str(ev.flags.get("moe-runner-backend", "auto"))
    evidence = [EvidenceItem(source="startup log",
                             text="'Using default MoE kernel config. Performance might be "
                                  f"sub-optimal!' (moe-runner-backend {backend})",
                             values={"moe_runner_backend": backend})]
    model = ctx.graph_fit or ctx.any_fit
    found: list[tuple[float, StepEvidence, Any]] = []
    for step in ctx.late:
        seconds = decode_step_s(step)
        if seconds is not None and model is not None:
            excess = model.intercept * (1.0 - 1.0 / MOE_UNTUNED_SPEEDUP)
            found.append((share(excess, seconds), step, (seconds, excess)))
    best = best_found(found)
    suggest = Suggestion(flags={"moe-runner-backend": "cutlass"},
                         expect="tuned MoE GEMMs: less time per step at every concurrency (or "
                                "tune configs with SGLang's benchmark/kernels/fused_moe_triton)")
    if best is None or model is None:
        return Cause(id="moe-untuned", title="Triton MoE runs its default (untuned) kernel "
                     "config", confidence=0.0, evidence=evidence, suggest=suggest,
                     effect=effect_of(ctx, None, "unmeasurable", ab=(
                         "A: as run; B: --moe-runner-backend cutlass, same load")))
    explained, step, (seconds, excess) = best
    evidence.append(effect_item(
        step, explained, f"{ms_text(model.intercept)} of the {ms_text(seconds)} decode step "
                         "does not grow with the batch (expert weight streaming); a tuned "
                         f"kernel at >= {MOE_UNTUNED_SPEEDUP}x (sglang PR #33208) saves "
                         f"{ms_text(excess)}",
        step_ms=round(seconds * 1000, 1), excess_ms=round(excess * 1000, 1)))
    gain, said = predict(explained, step, "the MoE GEMMs ran a tuned kernel")
    lo_share, hi_share = (share(model.intercept * (1.0 - 1.0 / x), seconds)
                          for x in MOE_SPEEDUP_RANGE)
    low, high = gain_pct(lo_share), gain_pct(hi_share)
    return Cause(id="moe-untuned", title="Triton MoE runs its default (untuned) kernel config",
                 confidence=round(explained, 3), evidence=evidence,
                 effect=effect_of(ctx, explained, "prior", low=round(lo_share, 3),
                                   high=round(hi_share, 3), ab=(
                     "A: as run; B: --moe-runner-backend cutlass (or tuned Triton configs), "
                     "same load")),
                 suggest=suggest.model_copy(update={
                     "gain_pct": gain, "at_concurrency": ab_level(step), "gain_kind": "prior",
                     "gain_low_pct": low, "gain_high_pct": high,
                     "expect": f"{said} (a prior: +{low:.0f}..+{high:.0f}% for tuned kernels "
                               f"{MOE_SPEEDUP_RANGE[0]:g}-{MOE_SPEEDUP_RANGE[1]:g}x faster): "
                               f"{suggest.expect}"}))


# ------------------------------------------------------------------------------ client


@rule("client-bound",
      checked="client: worker CPU, achieved vs target concurrency")
def client_bound(ev: RunEvidence, ctx: Context) -> Cause | None:
    found: list[tuple[float, StepEvidence, Any]] = []
    for step in ctx.late:
        c = step.client
        if c is None or c.measured_concurrency is None or c.target < 1:
            continue  # target 0: an open-loop step holds no set number of streams
        # The engine's own warning (a worker above 75% CPU or event-loop lag p99 > 20 ms,
        # AIPerf's thresholds) says the client may distort the step; holding fewer streams
        # than asked says by how much: throughput follows the streams actually held.
        # The server's side says it better than the client's: a late client still counts a
        # request in flight while it reads the chunks, but the server decodes fewer.
        busy = (c.client_cpu_max or 0.0) >= 0.85 or bool(c.client_warning)
        enough = c.num_prompts is None or c.num_prompts >= c.target
        if busy and enough:
            held = c.measured_concurrency
            if step.decode:
                # What the server holds is running + queued: requests it queues behind a cap
                # or a full pool reached it, so the client held them (a loaded client's
                # event-loop lag alone once read a running cap of 4 at c=8 as client-bound).
                held = min(held, median(p.running + p.queue for p in step.decode))
            # The client's ITL is late here too: step times from the server's lines.
            model = fit(ctx.all, graph=None, client=False)
            found.append((throughput_share(held, c.target, model), step, (c, held)))
    best = best_found(found)
    if best is None:
        return None
    explained, step, (c, held) = best
    workers = int(ev.flags.get("_workers", 0) or 0)
    gain, said = predict(explained, step, "the client held every stream")
    return Cause(
        id="client-bound", title="the load generator cannot hold the concurrency",
        confidence=round(explained, 3),
        evidence=[EvidenceItem(
            source="client",
            text=f"{window_text(step)}: busiest worker CPU {(c.client_cpu_max or 0) * 100:.0f}%, "
                 f"achieved concurrency {c.measured_concurrency:.1f} of {c.target}, the "
                 f"server decoding {held:.0f}"
                 + (f" ({c.client_warning})" if c.client_warning else ""),
            values={"client_cpu_max": c.client_cpu_max, "target": c.target,
                    "measured_concurrency": round(c.measured_concurrency, 2),
                    "server_running": held}),
            effect_item(step, explained, f"{held:.0f} of {c.target} streams reach the server")],
        suggest=Suggestion(sweep={"workers": max(2, workers * 2) if workers else 4},
                           gain_pct=gain, at_concurrency=ab_level(step),
                           expect=f"{said}: achieved concurrency reaches the target"))


def _ramp_drain(c: ClientRecord) -> float:
    """The share of a step spent ramping up and draining: outside the longest span at the
    steady ratio when the client measured it, else what Little's law says was missing; at
    least the first wave's wait for its prefills (TTFT p50 over the step)."""
    if c.step_s and c.steady_window_s is not None:
        outside = 1.0 - min(1.0, c.steady_window_s / c.step_s)
    elif c.measured_concurrency is not None:
        outside = max(0.0, 1.0 - c.measured_concurrency / c.target)
    else:
        outside = 0.0  # not measured (a sweep JSON without it): not read as zero achieved
    ramp = (c.ttft_p50_ms or 0.0) / 1000.0 / c.step_s if c.step_s else 0.0
    return min(0.99, max(outside, ramp))


@rule("too-few-prompts",
      checked="client: prompts per concurrency, achieved concurrency")
def too_few_prompts(ev: RunEvidence, ctx: Context) -> Cause | None:
    found: list[tuple[float, StepEvidence, Any]] = []
    for step in ctx.all:
        c = step.client
        if c is None or not c.num_prompts or c.target < 1:
            continue  # an open-loop step's requests arrive at a rate: no waves to count
        waves = c.num_prompts / c.target
        # A step the client measured at steady state was long enough, however few its waves:
        # the step tables mark it ok with `steady.reached`, and its figure is the window's.
        if c.steady_reached is True or (waves >= 2 and c.steady_reached is None):
            continue
        found.append((_ramp_drain(c), step, (c, waves)))
    best = best_found(found)
    if best is None:
        return None
    explained, step, (c, waves) = best
    achieved = c.measured_concurrency or 0.0
    steady = ("no steady state" if c.steady_reached is False else
              "steady state reached" if c.steady_reached else "steady state not measured")
    return Cause(
        id="too-few-prompts", title="too few prompts per concurrency: no steady state",
        confidence=round(explained, 3),
        evidence=[EvidenceItem(
            source="client",
            text=f"{window_text(step)}: {c.num_prompts} prompts at concurrency {c.target} "
                 f"({waves:.2f} waves, {steady}); achieved concurrency {achieved:.1f}; "
                 f"ramp-up and drain {pct_text(explained)} of the step",
            values={"num_prompts": c.num_prompts, "target": c.target, "waves": round(waves, 3),
                    "measured_concurrency": round(achieved, 2),
                    "steady_reached": c.steady_reached, "ramp_drain": round(explained, 3)})],
        suggest=Suggestion(sweep={"prompts_per_concurrency": 5}, at_concurrency=step.concurrency,
                           expect="five waves per step: ramp-up and drain stop dominating "
                                  "(SGLang's docs advise >= 5x the concurrency); the step's "
                                  "number becomes a steady-state one"))


# Client- and GPU-only causes for engines without a log grammar register after SGLang's.
from console.diagnose import engine_rules  # noqa: E402,F401  (registers its rules)

CAUSE_IDS = tuple(RULES)  # every cause id, in the order the rules run
