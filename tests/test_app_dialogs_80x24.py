"""Every dialog usable at 80x24 (issue 26, item 4): the A/B dialog's estimate and Start/Cancel,
and the flags editor's three buttons, lie whole inside their box at 80x24 and at 120x40."""

from __future__ import annotations

from typing import Any

import pytest
from textual.geometry import Region
from textual.widget import Widget

from console.app.app import PlateauApp
from console.app.screens.modals import ABPicker
from tests.support.app_fixtures import app_config, demo_events, fixed_clock
from tests.test_app_why import SchemaReplay
from widgets.flags_editor import FlagsEditor

SIZES = [(80, 24), (120, 40)]


def _flags_app() -> PlateauApp:
    loaded = app_config()
    host = loaded.config.hosts[0]
    session = SchemaReplay.from_events(host, demo_events(host.name), clock=fixed_clock)
    return PlateauApp(loaded, [session], clock=fixed_clock, tick_seconds=None)


async def _open(pilot: Any, key: str, screen: type) -> None:
    await pilot.pause()
    await pilot.press(key)
    for _ in range(100):
        await pilot.pause(0.05)
        if isinstance(pilot.app.screen, screen):
            break
    await pilot.pause(0.1)
    assert isinstance(pilot.app.screen, screen)


def _inside(widget: Widget, box: Region) -> bool:
    return box.contains_region(widget.region) and widget.region.height > 0


def _box(screen: Any, selector: str) -> Region:
    box = screen.query_one(selector)
    return box.content_region  # type: ignore[no-any-return]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_ab_dialog_shows_its_estimate_and_buttons(app_factory: Any,
                                                        size: tuple[int, int]) -> None:
    app = app_factory()
    async with app.run_test(size=size) as pilot:
        await _open(pilot, "a", ABPicker)
        screen = app.screen
        box = _box(screen, "#ab-box")
        for selector in ("#ab-estimate", "#ab-start-button", "#ab-cancel-button"):
            widget = screen.query_one(selector)
            assert _inside(widget, box), (selector, widget.region, box)
        assert "estimate" in str(screen.query_one("#ab-estimate").render())


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_flags_editor_shows_all_three_buttons_whole(size: tuple[int, int]) -> None:
    app = _flags_app()
    async with app.run_test(size=size) as pilot:
        await _open(pilot, "f", FlagsEditor)
        screen = app.screen
        box = _box(screen, "#dialog")
        for selector in ("#cancel", "#save", "#restart", "#profile-name", "#diff"):
            widget = screen.query_one(selector)
            assert _inside(widget, box), (selector, widget.region, box)
        assert screen.query_one("#fields").region.height >= 3


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_ab_dialog_snapshot(snap_compare: Any, app_factory: Any, size: tuple[int, int]) -> None:
    async def run_before(pilot: Any) -> None:
        await _open(pilot, "a", ABPicker)

    assert snap_compare(app_factory(), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_flags_editor_snapshot(snap_compare: Any, size: tuple[int, int]) -> None:
    async def run_before(pilot: Any) -> None:
        await _open(pilot, "f", FlagsEditor)
        pilot.app.clear_notifications()  # "reading the flags…" stays up for a timing's while
        await pilot.pause()

    assert snap_compare(_flags_app(), terminal_size=size, run_before=run_before)
