"""Shared fixtures. Each area keeps its fixtures in tests/support/<area>_fixtures.py;
all of them are loaded here so any test can use any fixture."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = sorted(
    f"tests.support.{path.stem}"
    for path in (Path(__file__).parent / "support").glob("*_fixtures.py")
)


def pytest_configure(config: object) -> None:
    """Give the test run a home of its own.

    A local host's run_dir defaults to ~/.plateau, which holds the host-wide lease and launch
    records: a test must neither see nor leave state in the real home (nor meet another run's
    lease there), and the config, history and cache defaults must point at files the run owns.
    """
    import tempfile

    home = Path(tempfile.mkdtemp(prefix="plateau-test-home-"))
    os.environ["HOME"] = str(home)
    for variable in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        os.environ.pop(variable, None)
    os.environ.pop("PLATEAU_CONFIG", None)


def pytest_collection_modifyitems(config: object, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (`.ci/run`), start the tests marked `slow` first.

    The run's wall time is the busiest worker's: a minute-long test begun near the end is a
    minute with the other workers idle. With `--maxschedchunk 1` the workers take one test at
    a time in this order, each holding one more queued behind the one it runs (xdist needs
    the next item to tear down), so each slow test is followed by a quick one: the first
    workers do not queue two slow tests behind each other. A serial run keeps the file order.
    """
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    slow = [item for item in items if item.get_closest_marker("slow")]
    quick = [item for item in items if not item.get_closest_marker("slow")]
    paired = [item for pair in zip(slow, quick, strict=False) for item in pair]
    items[:] = paired + slow[len(quick):] + quick[len(slow):]
