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
        before = list(footer.query("FooterKey"))
        assert app.footer_state("restart") == "enabled"
        assert not next(k for k in before if k.key == "r").has_class("-disabled")
        footer.refresh(recompose=True)  # nothing changed: the same key widgets stay
        await pilot.pause()
        assert list(footer.query("FooterKey")) == before

        app.active_state.server_state = "starting"  # `r` is relevant but not possible now
        footer.refresh(recompose=True)
        await pilot.pause()
        after = list(footer.query("FooterKey"))
        assert after != before
        assert app.footer_state("restart") == "disabled"
        assert next(k for k in after if k.key == "r").has_class("-disabled")
