"""Suggestions go the predicted way (issue 37), on the simulator's virtual clock: per
suggestion an A/B, B = A plus that suggestion alone, whose measured change has the predicted
sign and lands within 10 points of the prediction, or inside the range the suggestion states
(a bound: 0..bound; a prior: its range). Two stacked causes are both named; a change that acts
on latency predicts ITL, not throughput, and its A/B checks ITL."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest

from console.config_models import SweepPreset
from console.diagnose.models import Cause, Suggestion
from tests.support.agree import agrees
from tests.support.scenarios import BASE_SPEC, HELD_OUT, SCENARIOS, Scenario
from tests.support.virtual_sweep import VirtualRun, virtual_sweep

BY_NAME = {s.name: s for s in SCENARIOS + HELD_OUT}
# A host change applied as the simulator's setting it names: the board's default power
# limit, the default intake air.
HOST: dict[str, dict[str, Any]] = {"power-cap": {"sim-power-limit-w": 600},
                                   "thermal": {"sim-ambient-c": 28.0}}


@pytest.fixture(scope="module")
def tmp_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("stacked"))


def _spec(scenario: Scenario) -> SweepPreset:
    return SweepPreset(**{**BASE_SPEC, **scenario.spec})


@cache
def _run(name: str, tmp: str) -> VirtualRun:
    scenario = BY_NAME[name]
    return virtual_sweep(scenario.all_flags(), _spec(scenario), tmp=Path(tmp),
                         env=scenario.env)


def _b(scenario: Scenario, cause: Cause, tmp: str) -> VirtualRun:
    flags: dict[str, Any] = {**scenario.all_flags(), **cause.suggest.flags,
                             **HOST.get(cause.id, {})}
    return virtual_sweep({k: v for k, v in flags.items() if v is not None}, _spec(scenario),
                         tmp=Path(tmp), env=scenario.env)


def test_agrees_holds_the_line() -> None:
    plain = Suggestion(gain_pct=132.1)
    assert not agrees(plain, 49.4)  # issue 37's stacked ceiling: +132 predicted, +49 measured
    assert agrees(Suggestion(gain_pct=51.3), 49.4)
    assert not agrees(Suggestion(gain_pct=159.9), -10.6)  # the wrong sign
    bound = Suggestion(gain_pct=34.9, gain_kind="bound", gain_low_pct=0.0, gain_high_pct=34.9)
    assert agrees(bound, 24.8) and not agrees(bound, 40.0)


def test_two_stacked_causes_are_both_named_and_each_fix_goes_the_predicted_way(
        tmp_dir: str) -> None:
    scenario = BY_NAME["ceiling-and-cap"]
    a = _run(scenario.name, tmp_dir)
    named = [c.id for c in a.diagnosis.causes]
    assert named[:2] == ["cuda-graph-ceiling", "running-cap"], named
    for cause in a.diagnosis.causes[:2]:
        level = cause.suggest.at_concurrency
        assert level == 256
        b = _b(scenario, cause, tmp_dir)
        measured = (b.total(level) / a.total(level) - 1) * 100
        print(f"{cause.id}: predicted {cause.suggest.gain_pct:+.1f}% "
              f"({cause.suggest.gain_kind}), measured {measured:+.1f}%")
        assert agrees(cause.suggest, measured), (cause.id, cause.suggest, measured)
    # The cap is fitted eager against eager: its figure is a bound, said as one.
    cap = a.diagnosis.causes[1]
    assert cap.suggest.gain_kind == "bound" and cap.effect is not None
    assert cap.effect.kind == "bound"


def test_a_latency_fix_predicts_latency_not_throughput(tmp_dir: str) -> None:
    # Issue 37: prefill-interference predicted +159.9% throughput where the A/B measured
    # -10.6% (ITL mean did fall): the stall is per-request latency.
    scenario = BY_NAME["long-prompts-short-answers"]
    a = _run(scenario.name, tmp_dir)
    cause = (a.diagnosis.causes or a.diagnosis.candidates)[0]
    assert cause.id == "prefill-interference"
    s = cause.suggest
    assert s.gain_pct is None and s.itl_change_pct is not None and s.itl_change_pct < 0
    assert cause.effect is not None and cause.effect.kind == "latency"
    assert "not a throughput one" in s.expect
    level = s.at_concurrency
    assert level is not None
    b = _b(scenario, cause, tmp_dir)
    before = a.step(level).metrics
    after = b.step(level).metrics
    assert before is not None and after is not None
    assert before.itl_ms.mean is not None and after.itl_ms.mean is not None
    measured = (after.itl_ms.mean / before.itl_ms.mean - 1) * 100
    print(f"ITL mean predicted {s.itl_change_pct:+.1f}%, measured {measured:+.1f}%")
    assert measured < 0 and abs(measured - s.itl_change_pct) <= 10.0


@pytest.mark.parametrize("name", ["power-limit", "hot-intake", "moe-triton", "no-cuda-graph"])
def test_a_bound_or_a_prior_holds_its_ab(name: str, tmp_dir: str) -> None:
    # power-cap and thermal over-read (~1.6x): their gain is a bound; moe-untuned's 2x and
    # eager-decode's 60% are priors, stated with their range.
    scenario = BY_NAME[name]
    a = _run(name, tmp_dir)
    cause = a.diagnosis.causes[0]
    assert cause.id == scenario.expected
    s = cause.suggest
    assert s.gain_kind == ("bound" if cause.id in ("power-cap", "thermal") else "prior")
    level = s.at_concurrency
    assert level is not None
    b = _b(scenario, cause, tmp_dir)
    measured = (b.total(level) / a.total(level) - 1) * 100
    print(f"{name}: {cause.id} predicted {s.gain_pct}% ({s.gain_kind} "
          f"{s.gain_low_pct}..{s.gain_high_pct}), measured {measured:+.1f}%")
    assert agrees(s, measured)
