"""The footer rebuilds its keys only when what it shows changes (issue 19 item 5: resizes,
focus moves and binding refreshes asked for a rebuild each, three times before the first
frame of `plateau demo` and more while the host's session started)."""

from __future__ import annotations

from typing import Any

from tests.test_app_layout import _settle


async def test_footer_recompose_only_on_change(app_factory: Any) -> None:
    app = app_factory()
    async with app.run_test(size=(160, 48)) as pilot:
        await _settle(pilot)
        footer = app.screen.query_one("PlateauFooter")
        before = footer.shown_keys
        assert app.footer_state("restart") == "enabled"
        assert not next(k for k in before if k.key == "r").disabled
        drawn = footer._render_cache.lines  # nothing changed: no redraw
        footer.replan()
        await pilot.pause()
        assert footer.shown_keys is before and footer._render_cache.lines is drawn

        app.active_state.server_state = "starting"  # `r` is relevant but not possible now
        footer.replan()
        await pilot.pause()
        after = footer.shown_keys
        assert after != before
        assert app.footer_state("restart") == "disabled"
        assert next(k for k in after if k.key == "r").disabled
