"""Shared fixtures. Each area keeps its fixtures in tests/support/<area>_fixtures.py;
all of them are loaded here so any test can use any fixture."""

from __future__ import annotations

from pathlib import Path

pytest_plugins = sorted(
    f"tests.support.{path.stem}"
    for path in (Path(__file__).parent / "support").glob("*_fixtures.py")
)
