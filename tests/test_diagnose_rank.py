"""How causes are ranked (issue 37): a prior or a bound never outranks a measured cause; a
mechanism plainly present is named even when its effect is small or unknown, unless a sweep's
own levels measured it small (then it stays a candidate)."""

from __future__ import annotations

from console.diagnose.diagnose import rank_causes
from console.diagnose.models import Cause, Effect, Presence

PLAIN = Presence(lines=5, of=8, text="5 of 8 lines")


def _cause(cause_id: str, share: float, kind: str, presence: Presence | None = None) -> Cause:
    return Cause(id=cause_id, title=cause_id, confidence=share, evidence=[],
                 effect=Effect(kind=kind, share=share), presence=presence)


def test_a_prior_never_outranks_a_measured_cause() -> None:
    # tp-allreduce-pcie's 122 ms came from constants (4 us, 3.4 us a hop, x22): 45% from a
    # prior must not rank above a measured 30%.
    prior = _cause("tp-allreduce-pcie", 0.45, "prior")
    measured = _cause("running-cap", 0.30, "measured")
    bound = _cause("power-cap", 0.60, "bound")
    named, _ = rank_causes([prior, bound, measured], 0.15, 0.03)
    assert [c.id for c in named] == ["running-cap", "power-cap", "tp-allreduce-pcie"]


def test_present_mechanisms_are_named_unless_measured_small() -> None:
    estimated = _cause("cuda-graph-ceiling", 0.05, "estimate", PLAIN)
    unknown = _cause("eager-decode", 0.0, "unmeasurable",
                     Presence(lines=7, of=10, text="7 of 10"))
    measured_small = _cause("kv-cache-full", 0.05, "measured", PLAIN)
    weak = _cause("running-cap", 0.05, "estimate", Presence(lines=1, of=8, sure="weak"))
    named, candidates = rank_causes([estimated, unknown, measured_small, weak], 0.15, 0.03)
    # By presence: 7 of 10 before 5 of 8.
    assert [c.id for c in named] == ["eager-decode", "cuda-graph-ceiling"]
    assert [c.id for c in candidates] == ["running-cap", "kv-cache-full"]  # ties: id order


def test_a_clear_effect_ranks_before_a_present_one() -> None:
    clear = _cause("running-cap", 0.2, "estimate", PLAIN)
    present = _cause("eager-decode", 0.0, "unmeasurable", Presence(lines=9, of=9))
    named, _ = rank_causes([present, clear], 0.15, 0.03)
    assert [c.id for c in named] == ["running-cap", "eager-decode"]


def test_causes_stored_without_the_axes_rank_as_measured() -> None:
    old = Cause(id="running-cap", title="cap", confidence=0.4, evidence=[])
    assert old.effect_kind == "measured" and old.effect_label == "explains 40%"
    named, _ = rank_causes([old], 0.15, 0.03)
    assert named == [old]
