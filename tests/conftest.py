"""Shared fixtures. Each area keeps its fixtures in tests/support/<area>_fixtures.py;
all of them are loaded here so any test can use any fixture."""

from __future__ import annotations

from pathlib import Path

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
    import os
    import tempfile

    home = Path(tempfile.mkdtemp(prefix="plateau-test-home-"))
    os.environ["HOME"] = str(home)
    for variable in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        os.environ.pop(variable, None)
    os.environ.pop("PLATEAU_CONFIG", None)
