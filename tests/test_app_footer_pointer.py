"""The footer is one widget drawing every key (issue 42: ~15 FooterKey widgets were a twentieth
of `plateau demo`'s start-up); the pointer still acts per key, as Textual's FooterKey did:
a click presses the key under it, a greyed key only rings the bell, and hovering shows the
key's tooltip (for a greyed key, the refusal policy's reason)."""

from __future__ import annotations

from typing import Any

from console.app.footer import PlateauFooter
from console.app.screens.modals import HelpScreen
from console.server.refusal import HostFacts, refusal
from tests.test_app_layout import _settle


def _key(footer: PlateauFooter, key: str) -> Any:
    return next(k for k in footer.shown_keys if k.key == key)


async def test_a_click_presses_the_key_under_the_pointer(app_factory: Any) -> None:
    app = app_factory()
    async with app.run_test(size=(160, 48)) as pilot:
        await _settle(pilot)
        footer = app.screen.query_one(PlateauFooter)
        help_key = _key(footer, "question_mark")
        # the key's last cell, not its first: the whole span is the key
        await pilot.click(PlateauFooter, offset=(help_key.end - 1, 0))
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)


async def test_a_greyed_key_rings_the_bell_and_its_tooltip_says_why(app_factory: Any) -> None:
    words = refusal("restart", HostFacts(sweep_running=True))
    app = app_factory(sweep_running=True)
    rung: list[bool] = []
    async with app.run_test(size=(160, 48)) as pilot:
        await _settle(pilot)
        app.bell = lambda: rung.append(True)
        footer = app.screen.query_one(PlateauFooter)
        restart = _key(footer, "r")
        assert restart.disabled and restart.tooltip == words
        await pilot.hover(PlateauFooter, offset=(restart.start, 0))
        await pilot.pause()
        assert footer.tooltip == words
        before = app.screen
        await pilot.click(PlateauFooter, offset=(restart.start, 0))
        await pilot.pause()
        assert rung == [True] and app.screen is before
        # Between keys (compact gap or past the last key): no key, no tooltip.
        last = footer.shown_keys[-1]
        await pilot.hover(PlateauFooter, offset=(min(last.end + 1, footer.size.width - 1), 0))
        await pilot.pause()
        assert footer.tooltip is None
