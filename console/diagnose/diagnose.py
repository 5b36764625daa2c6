"""Why a run plateaued: the knee plus ranked causes, from stored evidence alone.

    diagnosis = diagnose(steps, evidence)

Pure: the same steps and evidence always give the same diagnosis, so `plateau diagnose RUN`
works long after the server is gone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from console.bench.knee import knee_of_steps
from console.bench.models import StepResult
from console.diagnose.models import Cause, Diagnosis, KneeInfo, RunEvidence, StepEvidence
from console.diagnose.rules import RULES, Context

CHECKED = {
    "cuda-graph-ceiling": "Decode lines: #running-req vs the captured CUDA-graph batch sizes",
    "eager-decode": "Decode lines / flags: decode CUDA graphs in use",
    "running-cap": "Decode lines: #running-req against max_running_requests, #queue-req",
    "kv-cache-full": "token usage, 'KV cache pool is full' lines",
    "prefill-interference": "Prefill lines during decode, client ITL p99/p50",
    "tp-allreduce-pcie": "topology (NVLink), TP size, NCCL env, GPU utilisation vs PCIe",
    "power-cap": "GPU telemetry: power vs limit, SW power cap reason, SM clocks",
    "thermal": "GPU telemetry: thermal slowdown reasons, temperature",
    "moe-untuned": "startup log: 'Using default MoE kernel config' warning",
    "client-bound": "client: worker CPU, achieved vs target concurrency",
    "too-few-prompts": "client: prompts per concurrency, achieved concurrency",
}


def _knee_info(steps: Sequence[StepResult]) -> KneeInfo:
    knee = knee_of_steps(steps)
    return KneeInfo(kind=knee.kind, concurrency=knee.concurrency,
                    next_concurrency=knee.next_concurrency, gain_pct=knee.gain_pct,
                    sentence=knee.sentence)


def _late(knee: KneeInfo, steps: list[StepEvidence]) -> list[StepEvidence]:
    """The knee's step and every step above it; with no knee, the largest concurrency."""
    if not steps:
        return []
    ordered = sorted(steps, key=lambda s: (s.concurrency, s.index))
    if knee.kind in ("saturates", "declines") and knee.concurrency is not None:
        late = [s for s in ordered if s.concurrency >= knee.concurrency]
        # The knee step itself is still below the cause; look from the step after it first.
        after = [s for s in late if s.concurrency > knee.concurrency]
        return after + [s for s in late if s not in after]
    top = ordered[-1].concurrency
    return [s for s in ordered if s.concurrency == top]


def diagnose(steps: Sequence[StepResult], evidence: RunEvidence) -> Diagnosis:
    knee = _knee_info(steps)
    ok = {s.index for s in steps if s.status == "ok"}
    step_evidence = [s for s in evidence.steps if s.index in ok] or list(evidence.steps)
    ctx = Context(knee=knee, late=_late(knee, step_evidence), all=step_evidence)
    causes: list[Cause] = []
    for rule in RULES.values():
        cause = rule(evidence, ctx)
        if cause is not None:
            if knee.kind == "scaling" and cause.id not in ("client-bound", "too-few-prompts"):
                # Nothing plateaued: a mechanism can be present without limiting this curve.
                cause = cause.model_copy(update={"confidence": round(cause.confidence * 0.7, 2)})
            causes.append(cause)
    order = list(RULES)
    causes.sort(key=lambda c: (-c.confidence, order.index(c.id)))
    return Diagnosis(knee=knee, causes=causes, checked=[CHECKED[k] for k in RULES],
                     sources=list(evidence.sources))


def diagnose_stored(store: Any, run_id: int | None, steps: Sequence[StepResult]) -> Diagnosis:
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
                "evidence": [e.model_dump(mode="json") for e in c.evidence],
                "suggest": {k: v for k, v in c.suggest.model_dump(mode="json").items()
                            if v not in ({}, None, "")},
            }
            for c in diagnosis.causes
        ],
        "checked": diagnosis.checked,
        "sources": diagnosis.sources,
        "verdict": diagnosis.verdict,
    }


def diagnosis_lines(diagnosis: Diagnosis, top: int = 3) -> list[str]:
    """The text under the knee sentence: top causes with their first evidence and the fix."""
    if not diagnosis.causes:
        return ["why: no clear cause. Checked: " + "; ".join(diagnosis.checked)]
    lines = []
    for rank, cause in enumerate(diagnosis.causes[:top], 1):
        lines.append(f"why #{rank}: {cause.id} ({cause.confidence:.0%}): {cause.title}")
        for item in cause.evidence[:2]:
            lines.append(f"    {item.source}: {item.text}")
        fix = suggestion_text(cause)
        if fix:
            lines.append(f"    try: {fix}")
    return lines


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
