"""The collector's pace in the long-running processes (console/gc_policy.py)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from console.gc_policy import MIDDLE_EVERY, YOUNG_EVERY, pace_gc
from tests.support.fleet_app import fleet_app


@pytest.fixture
def default_pace() -> Iterator[None]:
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*saved)


@pytest.mark.usefixtures("default_pace")
def test_the_console_collects_less_often() -> None:
    fleet_app(["a", "b"])
    assert gc.get_threshold() == (YOUNG_EVERY, MIDDLE_EVERY, 10)


@pytest.mark.usefixtures("default_pace")
def test_a_slower_pace_already_set_is_kept() -> None:
    gc.set_threshold(100_000, 50, 30)
    pace_gc()
    assert gc.get_threshold() == (100_000, 50, 30)
