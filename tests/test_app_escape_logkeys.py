"""Keys that say something (issue 26, item 7): escape leaves every full-screen view for the
dashboard; the log's keys act on the log whatever panel has the focus, or say why they cannot."""

from __future__ import annotations

from typing import Any

import pytest

from widgets.log_view import LogView


async def _settle(pilot: Any) -> None:
    await pilot.pause()
    await pilot.pause(0.05)


@pytest.mark.parametrize("key,mode", [("h", "history"), ("W", "why"), ("c", "compare"),
                                      ("e", "events"), ("g", "config"), ("t", "topology")])
async def test_escape_goes_back_to_the_dashboard(app_factory: Any, key: str, mode: str) -> None:
    app = app_factory()
    async with app.run_test(size=(120, 40)) as pilot:
        await _settle(pilot)
        await pilot.press(key)
        await _settle(pilot)
        assert app.current_mode == mode
        await pilot.press("escape")
        await _settle(pilot)
        assert app.current_mode == "dashboard"


async def test_log_keys_act_on_the_log_with_the_gpu_panel_focused(app_factory: Any) -> None:
    app = app_factory()
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        await _settle(pilot)
        log = app.screen.query_one(LogView)
        app.screen.gpu_view.focus()
        await _settle(pilot)
        wrap, level, own = log.lines.wrap, log.store.filter.min_severity, log.store.filter.hide_own
        await pilot.press("w", "l", "o")
        await _settle(pilot)
        assert app.screen.focused is app.screen.gpu_view
        assert log.lines.wrap is not wrap
        assert log.store.filter.min_severity != level
        assert log.store.filter.hide_own is not own


async def test_a_log_key_says_why_when_the_log_is_hidden(app_factory: Any) -> None:
    app = app_factory()
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        await _settle(pilot)
        app.screen.gpu_view.focus()
        await pilot.press("3")  # hide the log
        await _settle(pilot)
        await pilot.press("l")
        await _settle(pilot)
        assert any("the log is hidden (3 shows it)" in str(n.message)
                   for n in app._notifications)
