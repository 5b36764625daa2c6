"""Snapshot tests of every screen on fixed demo-like data, at 80x24 and 160x48, in two themes.

Hermetic: ReplaySession data (no timers, no network), a frozen clock for the uptime, no
animations, no config discovery (app_factory).
"""

from __future__ import annotations

from typing import Any

import pytest

SCREENS = ["dashboard", "history", "compare", "topology", "events", "config"]
SIZES = [(80, 24), (160, 48)]
THEMES = ["plateau-dark", "plateau-light"]


async def _settle(pilot: Any) -> None:
    # The host pumps run for the app's life; wait for their messages and the table loaders.
    await pilot.pause()
    loaders = [w for w in pilot.app.workers if w.group != "pumps"]
    if loaders:  # an empty list would mean "all workers", pumps included
        await pilot.app.workers.wait_for_complete(loaders)
    await pilot.pause(0.1)
    await pilot.pause()


@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("screen", SCREENS)
def test_screen(snap_compare: Any, app_factory: Any, screen: str, size: tuple[int, int],
                theme: str) -> None:
    app = app_factory(screen=screen, theme=theme)
    assert snap_compare(app, terminal_size=size, run_before=_settle)


def test_help_overlay(snap_compare: Any, app_factory: Any) -> None:
    async def open_help(pilot: Any) -> None:
        await _settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(app_factory(), terminal_size=(120, 40), run_before=open_help)


def test_contrast_theme_ascii(snap_compare: Any, app_factory: Any) -> None:
    app = app_factory(theme="plateau-contrast", ascii=True)
    assert snap_compare(app, terminal_size=(120, 40), run_before=_settle)


@pytest.mark.parametrize("screen", ["dashboard", "compare"])
def test_ab_result(snap_compare: Any, app_factory: Any, screen: str) -> None:
    """After an A/B: the chart overlays A and B; compare shows its deltas and noise note."""
    app = app_factory(screen=screen, with_ab=True)
    assert snap_compare(app, terminal_size=(160, 48), run_before=_settle)


@pytest.mark.parametrize("size", [(100, 30), (200, 60)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_dashboard_sizes(snap_compare: Any, app_factory: Any, size: tuple[int, int]) -> None:
    """Between and beyond the two sizes above: 100x30 (title rules, full-width GPU rows, the
    sweep knee in a line) and 200x60 (boxes, a plotted sweep, the log's detail pane)."""
    assert snap_compare(app_factory(), terminal_size=size, run_before=_settle)
