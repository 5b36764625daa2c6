from __future__ import annotations

import pytest

from console.bench.knee import find_knee, knee_of_steps
from tests.support.bench_fixtures import fake_step


def test_saturating_curve_names_the_knee_and_the_gain() -> None:
    curve = [(1, 100), (2, 195), (4, 380), (8, 700), (16, 1200), (32, 1800), (64, 2300),
             (128, 2450), (256, 2480)]  # fmt: skip
    knee = find_knee(curve)
    assert knee.kind == "saturates"
    assert knee.concurrency == 64
    assert knee.next_concurrency == 128
    assert knee.gain_pct == pytest.approx(6.52, abs=0.01)
    assert knee.sentence == "saturates at ~64: +6.5% from 64\u2192128 (total tok/s)"


def test_linear_curve_is_still_scaling() -> None:
    knee = find_knee([(c, 100.0 * c) for c in (1, 2, 4, 8)])
    assert knee.kind == "scaling"
    assert knee.concurrency == 8
    assert "still scaling at 8: +100.0% from 4\u21928" in knee.sentence


def test_decline_reports_the_peak() -> None:
    knee = find_knee([(1, 100), (2, 190), (4, 300), (8, 290)])
    assert knee.kind == "declines"
    assert knee.concurrency == 4
    assert knee.sentence.startswith("peaks at ~4: \u22123.3% from 4\u21928")


def test_uneven_spacing_is_judged_per_doubling() -> None:
    # 16 -> 64 is two doublings; +21% over two doublings is exactly 10%/doubling: not a knee.
    assert find_knee([(16, 1000), (64, 1210.1), (128, 1400)]).kind == "scaling"
    # +15% over two doublings is ~7%/doubling: saturated at 16.
    assert find_knee([(16, 1000), (64, 1150), (128, 1200)]).concurrency == 16


def test_repeats_are_averaged_and_failed_steps_ignored() -> None:
    steps = [
        fake_step(1, 100), fake_step(1, 120, repeat=1),
        fake_step(2, 210), fake_step(2, 230, repeat=1),
        fake_step(4, 0, status="failed"),
        fake_step(8, 230),
    ]  # fmt: skip
    knee = knee_of_steps(steps)
    # 110 -> 220 (+100%), then 2 -> 8 is 2 doublings at +4.5%: saturates at 2.
    assert knee.kind == "saturates" and knee.concurrency == 2


def test_too_few_points() -> None:
    assert find_knee([(4, 100)]).kind == "insufficient"
    assert find_knee([]).kind == "insufficient"
