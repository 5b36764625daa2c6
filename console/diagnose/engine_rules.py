"""Causes an engine without a log grammar still shows: from the client's record and the GPU
telemetry alone (an OpenAI-compatible server, `transformers serve`; docs/real-engine.md).

They speak only where no SGLang batch line was read (with those lines the SGLang rules in
rules.py see the same mechanisms better) and say what they saw, in the run's own figures:

- gpu-waits-on-host: the decode step grows with the batch while the GPU is idle most of the
  time, so the step is spent on the host (scheduling, Python, kernel launches). Seen on the
  real `transformers serve` on an H200: ITL p50 31 -> 180 ms from 1 to 256 streams at a median
  GPU utilisation of 4-41%, and `--cb-use-cuda-graph` (fewer launches) measured +185%.
- admission-queue: past the knee throughput stops while the inter-token latency does not move
  and the time to first token grows: more requests are not decoded together, they wait to be
  admitted (a running-request or batch-token cap), as SGLang's #queue-req would say.
"""

from __future__ import annotations

import math
from itertools import pairwise
from statistics import median

from console.diagnose.models import (
    Cause,
    Effect,
    EvidenceItem,
    Presence,
    RunEvidence,
    StepEvidence,
    Suggestion,
)
from console.diagnose.registry import Context, rule

HOST_BOUND_UTIL = 0.6  # a GPU busy under 60% of the time at the top level is not the limit
ITL_GROWTH = 2.0  # the per-token latency at least doubled from the lowest level
QUEUE_TTFT_GROWTH = 3.0
FLAT_ITL = 1.25
FLAT_GAIN = 0.10


def _has_log_grammar(ctx: Context) -> bool:
    return any(step.decode_rows or step.prefill_rows for step in ctx.all)


def _gpu_util(step: StepEvidence) -> float | None:
    values = [g.util for g in step.gpu if g.util is not None and math.isfinite(g.util)
              and 0 <= g.util <= 100]
    return median(values) / 100.0 if values else None


def _positive(value: float | None) -> bool:
    """A figure a rule may divide by: stored numbers can be NaN, inf or negative."""
    return value is not None and math.isfinite(value) and value > 0


def _ratio(top: float | None, bottom: float | None) -> float:
    """top / bottom of two figures _positive has passed."""
    return (top or 0.0) / (bottom or 1.0)


def _by_level(ctx: Context) -> list[StepEvidence]:
    """One step per level (its last repeat), lowest first, with the client's record."""
    steps: dict[int, StepEvidence] = {}
    for step in ctx.all:
        c = step.client
        if c is not None and _positive(c.itl_p50_ms) and _positive(c.ttft_p50_ms):
            steps[step.concurrency] = step
    return [steps[c] for c in sorted(steps)]


@rule("gpu-waits-on-host",
      checked="client ITL growth with the batch against the GPU's busy share (no log grammar)")
def gpu_waits_on_host(ev: RunEvidence, ctx: Context) -> Cause | None:
    if _has_log_grammar(ctx):
        return None
    levels = _by_level(ctx)
    if len(levels) < 2:
        return None
    low, top = levels[0], levels[-1]
    util = _gpu_util(top)
    if util is None or top.concurrency < 4 * low.concurrency:
        return None
    assert low.client is not None and top.client is not None
    itl_low, itl_top = low.client.itl_p50_ms or 0.0, top.client.itl_p50_ms or 0.0
    if util >= HOST_BOUND_UTIL or itl_top < ITL_GROWTH * itl_low:
        return None
    off_gpu = 1.0 - util
    utils = ", ".join(f"c={s.concurrency} {u:.0%}" for s in levels
                      if (u := _gpu_util(s)) is not None)
    return Cause(
        id="gpu-waits-on-host", title="decode steps are spent on the host, not the GPU",
        confidence=round(off_gpu, 3),
        presence=Presence(lines=len(levels), of=len(levels), sure="plain", text=(
            f"ITL p50 {itl_top / itl_low:.1f}x from c={low.concurrency} to "
            f"c={top.concurrency}, the GPU busy {util:.0%} at the top")),
        effect=Effect(kind="bound", share=round(off_gpu, 3),
                      ab="A/B CUDA graphs or torch.compile for the decode step"),
        evidence=[
            EvidenceItem(source="client", text=(
                f"ITL p50 {itl_low:.1f} ms at c={low.concurrency} -> {itl_top:.1f} ms at "
                f"c={top.concurrency} ({itl_top / itl_low:.1f}x as the batch grew)"),
                values={"itl_p50_low_ms": round(itl_low, 2), "itl_p50_top_ms": round(itl_top, 2),
                        "low": low.concurrency, "top": top.concurrency}),
            EvidenceItem(source="gpu", text=(
                f"median GPU utilisation {utils}: at c={top.concurrency} a kernel ran in "
                f"{util:.0%} of the samples' time"),
                values={"gpu_util_top": round(util, 3)}),
            EvidenceItem(source="effect", text=(
                f"up to {off_gpu:.0%} of the top step's time is off the GPU (an upper bound: "
                "utilisation counts any kernel running, not how full it is)"),
                values={"explained": round(off_gpu, 3)}),
        ],
        suggest=Suggestion(
            flags={"cb-use-cuda-graph": True} if "continuous-batching" in ev.flags else {},
            at_concurrency=top.concurrency,
            expect=("fewer host round trips per decode step: CUDA graphs or torch.compile "
                    "(transformers serve: --cb-use-cuda-graph, --compile; vLLM: drop "
                    "--enforce-eager); ITL then grows less with the batch")))


@rule("admission-queue",
      checked="client TTFT growth with flat ITL and flat throughput past the knee "
              "(no log grammar)")
def admission_queue(ev: RunEvidence, ctx: Context) -> Cause | None:
    if _has_log_grammar(ctx):
        return None
    levels = _by_level(ctx)
    for below, above in pairwise(levels):
        a, b = below.client, above.client
        assert a is not None and b is not None
        if not (_positive(a.total_tok_s) and _positive(b.total_tok_s)):
            continue
        gain = _ratio(b.total_tok_s, a.total_tok_s) - 1.0
        ttft = _ratio(b.ttft_p50_ms, a.ttft_p50_ms)
        itl = _ratio(b.itl_p50_ms, a.itl_p50_ms)
        if gain < FLAT_GAIN and ttft >= QUEUE_TTFT_GROWTH and itl <= FLAT_ITL:
            return _queue_cause(below, above, gain, ttft, itl)
    return None


def _queue_cause(below: StepEvidence, above: StepEvidence, gain: float, ttft: float,
                 itl: float) -> Cause:
    a, b = below.client, above.client
    assert a is not None and b is not None
    # Held back: the streams beyond the admitted ones add nothing; had they been decoded
    # together at the same ITL, throughput would have grown with them.
    held = 1.0 - below.concurrency / above.concurrency
    return Cause(
        id="admission-queue", title="requests wait to be admitted: a cap on running requests",
        confidence=round(held, 3),
        presence=Presence(lines=2, of=2, sure="plain", text=(
            f"c={below.concurrency} -> c={above.concurrency}: TTFT {ttft:.1f}x, ITL "
            f"{itl:.2f}x, throughput {gain:+.1%}")),
        effect=Effect(kind="bound", share=round(held, 3),
                      ab=f"A/B a higher running-request cap at c={above.concurrency}"),
        evidence=[
            EvidenceItem(source="client", text=(
                f"c={below.concurrency} -> c={above.concurrency}: total tok/s "
                f"{a.total_tok_s:,.1f} -> {b.total_tok_s:,.1f} ({gain:+.1%}), ITL p50 "
                f"{a.itl_p50_ms:.1f} -> {b.itl_p50_ms:.1f} ms ({itl:.2f}x), TTFT p50 "
                f"{a.ttft_p50_ms:.0f} -> {b.ttft_p50_ms:.0f} ms ({ttft:.1f}x)"),
                values={"gain": round(gain, 4), "ttft_growth": round(ttft, 2),
                        "itl_growth": round(itl, 3)}),
            EvidenceItem(source="effect", text=(
                f"the streams past c={below.concurrency} wait instead of decoding: "
                f"{held:.0%} of c={above.concurrency}'s streams add no throughput (derived "
                "from the two levels, not measured: the A/B of a higher cap measures it)"),
                values={"explained": round(held, 3)}),
        ],
        suggest=Suggestion(
            at_concurrency=above.concurrency,
            expect=("raise the server's limit on requests decoded together (SGLang: "
                    "--max-running-requests; transformers serve: --cb-max-batch-tokens, "
                    "--cb-num-blocks; vLLM: --max-num-seqs) and A/B it at "
                    f"c={above.concurrency}")))
