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
