"""The Why view says how much each cause explains and what its fix is predicted to gain, and
an abstention shows the strongest small effects and the run's noise."""

from __future__ import annotations

from console.diagnose.models import Cause, Diagnosis, EvidenceItem, KneeInfo, Suggestion
from widgets.why_view import why_text

KNEE = KneeInfo(kind="saturates", concurrency=64, sentence="saturates at ~64")


def test_a_cause_says_its_share_and_predicted_gain() -> None:
    cause = Cause(id="cuda-graph-ceiling", title="decode batch above the ceiling runs eagerly",
                  confidence=0.37, evidence=[EvidenceItem(source="Decode lines", text="x")],
                  suggest=Suggestion(flags={"cuda-graph-max-bs-decode": 128}, gain_pct=59.0,
                                     at_concurrency=128))
    text = why_text(Diagnosis(knee=KNEE, causes=[cause]), "").plain
    assert "1. cuda-graph-ceiling  explains 37% of the throughput" in text
    assert "predicted gain of the fix: +59% at c=128" in text


def test_no_clear_cause_lists_candidates_and_noise() -> None:
    small = Cause(id="prefill-interference", title="prefill stalls decode", confidence=0.08,
                  evidence=[])
    diagnosis = Diagnosis(knee=KNEE, candidates=[small], noise=0.03,
                          checked=["decode graphs", "KV pool"])
    text = why_text(diagnosis, "").plain
    assert "No clear cause.  (this run's noise: 3% of throughput)" in text
    assert "prefill-interference explains 8%" in text
    assert "- KV pool" in text


def test_a_present_cause_with_no_measured_effect_and_a_bound_say_what_they_are() -> None:
    from console.diagnose.models import Effect, Presence

    present = Cause(id="eager-decode", title="decode runs without CUDA graphs", confidence=0.0,
                    evidence=[], presence=Presence(lines=7, of=10, text="7 of 10 lines eager"),
                    effect=Effect(kind="unmeasurable", ab="A: as run; B: graphs on"),
                    suggest=Suggestion(flags={"cuda-graph-backend-decode": "full"}))
    bound = Cause(id="power-cap", title="GPUs held at their power limit", confidence=0.26,
                  evidence=[], effect=Effect(kind="bound", share=0.26, low=0.0, high=0.26),
                  suggest=Suggestion(host="nvidia-smi -pl", gain_pct=34.6, gain_kind="bound",
                                     gain_low_pct=0.0, gain_high_pct=34.6, at_concurrency=256))
    latency = Cause(id="prefill-interference", title="prefill stalls decode", confidence=0.23,
                    evidence=[], effect=Effect(kind="latency", share=0.23),
                    suggest=Suggestion(flags={"chunked-prefill-size": 4096},
                                       itl_change_pct=-17.4, at_concurrency=32))
    text = why_text(Diagnosis(knee=KNEE, causes=[bound, present, latency]), "").plain
    assert "1. power-cap  explains up to 26% (an upper bound)" in text
    assert "predicted gain of the fix: up to +35% at c=256 (an upper bound)" in text
    assert "2. eager-decode  effect not measurable from this evidence" in text
    assert "present: 7 of 10 lines eager" in text
    assert "predicted ITL mean change of the fix: -17% at c=32" in text
    assert "explains 0%" not in text


def test_allreduce_over_pcie_offers_the_layout_duel() -> None:
    """Issue 39: beside the path fix, the Why view offers the layouts that all-reduce over
    fewer GPUs; another cause does not."""
    pcie = Cause(id="tp-allreduce-pcie", title="tensor-parallel all-reduce over PCIe",
                 confidence=0.3, evidence=[],
                 suggest=Suggestion(flags={"tp-size": 4, "dp-size": 2}))
    other = pcie.model_copy(update={"id": "cuda-graph-ceiling"})
    text = why_text(Diagnosis(knee=KNEE, causes=[pcie]), "").plain
    assert "or: duel the layouts on this box: `plateau layout HOST`" in text
    assert "plateau layout" not in why_text(Diagnosis(knee=KNEE, causes=[other]), "").plain
