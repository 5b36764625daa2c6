"""The A/B verdict: Welch intervals per concurrency, one word, one sentence at the knee."""

from __future__ import annotations

import pytest

from console.bench.models import SteadyState, StepResult
from console.bench.verdict import differing_flags, judge, judge_point, t_quantile, welch
from tests.support.bench_fixtures import fake_step


def _steps(values: dict[int, list[float]]) -> list[StepResult]:
    out: list[StepResult] = []
    for c, repeats in values.items():
        out += [fake_step(c, v, repeat=r, index=len(out)) for r, v in enumerate(repeats)]
    return out


@pytest.mark.parametrize(
    ("df", "expected"), [(1, 12.7062), (2, 4.3027), (4, 2.7764), (10, 2.2281), (30, 2.0423)]
)
def test_t_quantile_matches_the_tables(df: float, expected: float) -> None:
    assert t_quantile(0.975, df) == pytest.approx(expected, abs=1e-3)


def test_welch_degrees_of_freedom() -> None:
    diff, se, df = welch([10, 12, 14], [20, 21, 22]) or (0, 0, 0)
    assert diff == pytest.approx(9.0)
    assert se == pytest.approx((4 / 3 + 1 / 3) ** 0.5)
    # (4/3 + 1/3)^2 / ((4/3)^2/2 + (1/3)^2/2) = 2.94...
    assert df == pytest.approx(2.941, abs=1e-3)
    assert welch([1.0], [1.0, 2.0]) is None


def test_words() -> None:
    assert judge_point(64, [100, 101, 99], [105, 104, 106]).word == "better"
    assert judge_point(64, [100, 101, 99], [95, 96, 94]).word == "worse"
    assert judge_point(64, [100, 103, 97], [101, 98, 102]).word == "within noise"
    point = judge_point(64, [100.0], [104.0])
    assert point.word == "no repeats" and point.half_width_pct is None


def test_sentence_at_the_knee() -> None:
    # A saturates at 64 (64 -> 128 adds < 10 %); B is ~4 % better there.
    a = _steps({16: [400, 404, 396], 32: [700, 706, 694], 64: [1000, 1010, 990],
                128: [1050, 1040, 1060]})
    b = _steps({16: [401, 399, 400], 32: [702, 696, 700], 64: [1040, 1046, 1034],
                128: [1092, 1098, 1086]})
    verdict = judge(a, b, label_a="triton", label_b="cutlass")
    assert verdict.knee_range == [64, 128]
    assert verdict.knee_word == "real"
    assert verdict.sentence.startswith("B +4.0% \u00b1 ")
    assert verdict.sentence.endswith(" at 64\u2013128: real")
    assert [p.word for p in verdict.points] == ["within noise", "within noise", "better", "better"]


def test_same_numbers_are_within_noise_and_single_runs_say_noise_unknown() -> None:
    a = _steps({4: [300, 310, 305], 8: [500, 490, 510]})
    b = _steps({4: [306, 301, 309], 8: [495, 505, 500]})
    verdict = judge(a, b)
    assert verdict.knee_word == "within noise"
    assert verdict.sentence.endswith(": within noise")
    single = judge(_steps({4: [300], 8: [500]}), _steps({4: [330], 8: [550]}))
    assert single.knee_word == "noise unknown"
    assert "noise unknown" in single.sentence and "+10.0%" in single.sentence


def test_failed_steps_are_left_out_and_steady_state_is_preferred() -> None:
    a = _steps({8: [500, 500, 500]})
    b = _steps({8: [500, 500, 500]})
    b[2] = fake_step(8, 0, repeat=2, status="failed")
    steady = SteadyState(ratio=0.8, threshold=7, reached=True, total_tok_s=600.0)
    b[0] = b[0].model_copy(
        update={"metrics": b[0].metrics.model_copy(update={"steady": steady})}  # type: ignore[union-attr]
    )
    point = judge(a, b).points[0]
    assert (point.n_a, point.n_b) == (3, 2)
    assert point.mean_b == pytest.approx(550.0)


def test_steps_without_steady_state_and_runs_not_interleaved_are_said() -> None:
    never = SteadyState(ratio=0.8, threshold=7, reached=False)
    a = [s.model_copy(update={"metrics": s.metrics.model_copy(update={"steady": never})})  # type: ignore[union-attr]
         for s in _steps({8: [500, 510]})]
    verdict = judge(a, _steps({8: [505, 500]}), interleaved=False)
    assert any("never reached steady state" in note for note in verdict.notes)
    assert any("interleave" in note for note in verdict.notes)


def test_differing_flags() -> None:
    assert differing_flags(
        {"tp": 8, "moe-runner-backend": "triton"},
        {"tp": 8, "moe-runner-backend": "cutlass", "enable-torch-compile": True},
    ) == [("enable-torch-compile", "-", "True"), ("moe-runner-backend", "triton", "cutlass")]


def test_per_level_verdicts_are_corrected_for_the_number_of_levels() -> None:
    """Six levels of an identical B: each level's interval is at 1 - 0.05/6 (Bonferroni), so
    a difference a single 95% test calls real at one level is within noise here."""
    from console.bench.models import StepMetrics, StepResult
    from console.bench.verdict import judge, judge_point

    a_vals, b_vals = [100.0, 100.6, 99.6], [98.8, 99.3, 98.6]  # -1.2% +- 1.0% at 95%
    assert judge_point(64, a_vals, b_vals).word == "worse"  # one 95% test alone

    def steps(values: list[list[float]]) -> list[StepResult]:
        out: list[StepResult] = []
        for level, reps in zip((8, 16, 32, 64, 128, 256), values, strict=True):
            for r, v in enumerate(reps):
                out.append(StepResult(index=len(out), concurrency=level, repeat=r, status="ok",
                                      metrics=StepMetrics(concurrency=level, total_tok_s=v)))
        return out

    same = [[100.0, 100.5, 99.5]] * 6
    verdict = judge(steps([*same[:3], a_vals, *same[4:]]), steps([*same[:3], b_vals, *same[4:]]))
    point = verdict.point(64)
    assert point is not None and point.word == "within noise", point
    assert verdict.level_confidence is not None
    assert abs(verdict.level_confidence - (1 - 0.05 / 6)) < 1e-9
    assert any("Bonferroni" in n for n in verdict.notes)
