"""Why a run plateaued: the knee plus ranked causes, from stored evidence alone.

    diagnosis = diagnose(steps, evidence)

Pure: the same steps and evidence always give the same diagnosis, so `plateau diagnose RUN`
works long after the server is gone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from console.bench.knee import knee_of_steps, step_level
from console.bench.models import StepResult
from console.diagnose.effects import CLEAR_EFFECT, MIN_EFFECT, noise_share
from console.diagnose.ladder_facts import evidence_ladder
from console.diagnose.models import (
    EFFECT_TIER,
    Cause,
    Diagnosis,
    KneeInfo,
    RunEvidence,
    StepEvidence,
)
from console.diagnose.registry import RULES, Context
from console.diagnose.rules import CAUSE_IDS
from console.logs.ladder import Ladder


def _knee_info(steps: Sequence[StepResult]) -> KneeInfo:
    knee = knee_of_steps(steps)
    return KneeInfo(kind=knee.kind, concurrency=knee.concurrency,
                    next_concurrency=knee.next_concurrency, gain_pct=knee.gain_pct,
                    sentence=knee.sentence, axis=knee.axis, level=knee.level)


def _late(knee: KneeInfo, steps: list[StepEvidence],
          levels: dict[int, float] | None = None) -> list[StepEvidence]:
    """The knee's step and every step above it; with no knee, the largest level. A step's
    level is its concurrency, or in a request-rate sweep its rate (`levels`, by index)."""
    if not steps:
        return []
    known = levels or {}

    def level(s: StepEvidence) -> float:
        return known.get(s.index, float(s.concurrency))

    ordered = sorted(steps, key=lambda s: (level(s), s.index))
    at = knee.level if knee.level is not None else knee.concurrency
    if knee.kind in ("saturates", "declines") and at is not None:
        late = [s for s in ordered if level(s) >= at]
        # The knee step itself is still below the cause; look from the step after it first.
        after = [s for s in late if level(s) > at]
        return after + [s for s in late if s not in after]
    top = level(ordered[-1])
    return [s for s in ordered if level(s) == top]


def diagnose(steps: Sequence[StepResult], evidence: RunEvidence,
             ladder: Ladder | None = None) -> Diagnosis:
    """Causes are mechanisms explaining at least CLEAR_EFFECT of the step's throughput, largest
    first; candidates explain less but more than the run's noise; smaller effects are not
    reported (they would be noise). `ladder`: the run's decode CUDA-graph ladder when the caller
    read it already (a log's text says more than its stored rows); else made from `evidence`."""
    knee = _knee_info(steps)
    unmeasured = why_nothing_completed(steps)
    if unmeasured is not None:
        return Diagnosis(knee=knee, no_measurement=unmeasured, sources=list(evidence.sources))
    ok = {s.index for s in steps if s.status == "ok"}
    step_evidence = [s for s in evidence.steps if s.index in ok] or list(evidence.steps)
    levels = {s.index: step_level(s) for s in steps}
    if ladder is None:
        ladder = evidence_ladder(evidence)
    ctx = Context(knee=knee, late=_late(knee, step_evidence, levels), all=step_evidence,
                  lines=evidence.split_from_log, ladder=ladder)
    noise = noise_share(_repeats(steps))
    rules = [RULES[cause_id] for cause_id in CAUSE_IDS]  # importing rules.py registered them
    found = [_unread(cause) for rule in rules if (cause := rule(evidence, ctx)) is not None]
    causes, candidates = rank_causes(found, max(CLEAR_EFFECT, noise), noise)
    return Diagnosis(knee=knee, causes=causes, candidates=candidates, noise=round(noise, 3),
                     checked=[r.checked for r in rules], sources=list(evidence.sources),
                     ladder=ladder)


def why_nothing_completed(steps: Sequence[StepResult]) -> str | None:
    """None when some request completed; else why every step failed, each reason once (a run
    with no completed request has no throughput to explain: issue 36)."""
    # A step where no request completed is failed (bench.sweep.failure_reason); a log's
    # steps (no client) are "ok" with the log's own rates.
    if not steps or any(s.status != "failed" for s in steps):
        return None
    reasons: list[str] = []
    for step in steps:
        samples = step.metrics.error_samples if step.metrics is not None else []
        reason = (step.error or (samples[0] if samples else "") or "no request completed")
        reason = reason.strip().splitlines()[0][:300] if reason.strip() else "no reply"
        if reason not in reasons:
            reasons.append(reason)
    return (f"no request completed in any of its {len(steps)} step(s): "
            + "; ".join(reasons[:3]) + ("; ..." if len(reasons) > 3 else ""))


def _unread(cause: Cause) -> Cause:
    """A log's lines that plainly show a mechanism but put its effect below what they can
    resolve (MIN_EFFECT): the effect is said as not measurable from them, with no gain
    predicted, rather than as a cost of ~0%."""
    effect = cause.effect
    present = cause.presence is not None and cause.presence.sure == "plain"
    if effect is None or effect.kind != "estimate" or not present or \
            cause.confidence >= MIN_EFFECT:
        return cause
    return cause.model_copy(update={
        "effect": effect.model_copy(update={"kind": "unmeasurable"}),
        "suggest": cause.suggest.model_copy(update={
            "gain_pct": None, "gain_low_pct": None, "gain_high_pct": None,
            "expect": "the effect is too small to read from the log's lines: "
                      "measure it with the A/B"})})


def _named(cause: Cause, clear: float) -> bool:
    """A cause is named when its effect is clear, or when the mechanism is plainly present and
    its effect could not be measured (an estimate from a log's lines, a prior, nothing): a
    present mechanism is never dropped for want of a measurement. A small *measured* effect
    stays a candidate: the run's own levels say it costs little."""
    if cause.confidence >= clear:
        return True
    present = cause.presence is not None and cause.presence.sure == "plain"
    return present and cause.effect_kind != "measured"


def rank_causes(found: Sequence[Cause], clear: float, noise: float
                ) -> tuple[list[Cause], list[Cause]]:
    """(causes, candidates). Causes: clear effects first, by effect, a measured or estimated
    one before a bound or a prior (a prior never decides the ranking against a measurement),
    then present mechanisms whose effect is small or unknown, by presence (the share of the
    lines that show them). Candidates: effects above the noise, largest first."""
    order = list(CAUSE_IDS)
    named = [c for c in found if _named(c, clear)]

    def key(c: Cause) -> tuple[int, int, float, int]:
        if c.confidence >= clear:
            return (0, EFFECT_TIER.get(c.effect_kind, 1), -c.confidence, order.index(c.id))
        p = c.presence
        seen = p.lines / p.of if p is not None and p.of else 0.0
        return (1, 0, -seen, order.index(c.id))

    named.sort(key=key)
    candidates = sorted((c for c in found if c not in named and c.confidence >= noise),
                        key=lambda c: (-c.confidence, order.index(c.id)))
    return named, candidates


def _repeats(steps: Sequence[StepResult]) -> dict[float, list[float]]:
    by_level: dict[float, list[float]] = {}
    for step in steps:
        if step.status == "ok" and step.metrics is not None:
            by_level.setdefault(step_level(step), []).append(
                step.metrics.headline_total_tok_s())
    return by_level


class EvidenceReader(Protocol):
    """Where a run's evidence is stored (console.store's RunStore)."""

    def load_evidence(self, run_id: int) -> RunEvidence | None: ...


def diagnose_stored(store: EvidenceReader | None, run_id: int | None,
                    steps: Sequence[StepResult]) -> Diagnosis:
    """The diagnosis from the evidence stored with run `run_id` (the client's record alone when
    nothing was stored)."""
    evidence = store.load_evidence(run_id) if store is not None and run_id is not None else None
    return diagnose(steps, evidence if evidence is not None else RunEvidence(sources=["client"]))


def diagnosis_json(diagnosis: Diagnosis) -> dict[str, Any]:
    """The `diagnosis` object of `plateau sweep --json` and `plateau diagnose --json`."""
    return {
        "knee": diagnosis.knee.model_dump(mode="json"),
        "causes": [
            {
                "id": c.id,
                "title": c.title,
                "confidence": c.confidence,
                "effect": c.effect.model_dump(mode="json") if c.effect else None,
                "presence": c.presence.model_dump(mode="json") if c.presence else None,
                "evidence": [e.model_dump(mode="json") for e in c.evidence],
                "suggest": {k: v for k, v in c.suggest.model_dump(mode="json").items()
                            if v not in ({}, None, "")},
            }
            for c in diagnosis.causes
        ],
        "candidates": [{"id": c.id, "title": c.title, "confidence": c.confidence,
                        "effect_kind": c.effect_kind} for c in diagnosis.candidates],
        "noise": diagnosis.noise,
        "checked": diagnosis.checked,
        "sources": diagnosis.sources,
        "verdict": diagnosis.verdict,
        "no_measurement": diagnosis.no_measurement,
    }


def diagnosis_lines(diagnosis: Diagnosis, top: int = 3) -> list[str]:
    """The text under the knee sentence: top causes with their first evidence and the fix."""
    if diagnosis.no_measurement is not None:
        return [f"why: nothing to diagnose: {diagnosis.no_measurement}"]
    if not diagnosis.causes:
        return [no_clear_cause(diagnosis)]
    lines = []
    for rank, cause in enumerate(diagnosis.causes[:top], 1):
        lines.append(f"why #{rank}: {cause.id} ({cause.effect_label}): {cause.title}")
        if cause.presence is not None and cause.presence.text and not any(
                e.text == cause.presence.text for e in cause.evidence):
            lines.append(f"    present: {cause.presence.text}")
        if cause.effect is not None and cause.effect.ab and cause.confidence < CLEAR_EFFECT:
            lines.append(f"    to measure it: {cause.effect.ab}")
        for item in cause.evidence[:2]:
            lines.append(f"    {item.source}: {item.text}")
        fix = suggestion_text(cause)
        if fix:
            lines.append(f"    try: {fix}")
    return lines


def no_clear_cause(diagnosis: Diagnosis) -> str:
    """What was checked, and the strongest small effects (explained share of throughput)."""
    strongest = ", ".join(f"{c.id} {c.confidence:.0%}" for c in diagnosis.candidates[:3])
    noise = f"{diagnosis.noise:.0%}" if diagnosis.noise is not None else "?"
    small = (f"strongest candidates: {strongest} (below {CLEAR_EFFECT:.0%}); "
             if strongest else f"nothing above the run's noise ({noise}); ")
    return f"why: no clear cause; {small}checked: " + "; ".join(diagnosis.checked)


def suggestion_text(cause: Cause) -> str:
    s = cause.suggest
    parts = [f"--{k} {v}" if v is not None and v is not True else
             (f"--{k}" if v is True else f"drop --{k}") for k, v in s.flags.items()]
    parts += [f"{k}={v}" if v is not None else f"unset {k}" for k, v in s.env.items()]
    parts += [f"sweep {k}={v}" for k, v in s.sweep.items()]
    if s.host:
        parts.append(s.host)
    text = ", ".join(parts)
    return f"{text} ({s.expect})" if s.expect and text else text
