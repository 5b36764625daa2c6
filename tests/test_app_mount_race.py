"""A host event or the header tick that reaches a screen before it has composed its widgets
(a slow, loaded machine: `NoMatches: PlateauHeader`) is not an error: the screen's own on_mount
renders the whole state once its widgets exist."""

from __future__ import annotations

from console.app.messages import HostChanged
from console.app.screens.dashboard import DashboardScreen
from tests.support.app_fixtures import make_app
from widgets.header import PlateauHeader


async def test_events_before_a_screen_is_composed_are_not_errors() -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        screen = DashboardScreen()
        app.push_screen(screen)  # on the stack now; its widgets come on a later loop turn
        assert app.screen is screen and not screen.is_mounted
        app._tick()  # the 1 s header tick
        app.on_host_changed(HostChanged(app.active_host, ("server", "sweep", "connection")))
        await pilot.pause()
        assert screen.is_mounted
        header = screen.query_one(PlateauHeader)  # rendered by its on_mount, from the state
        assert app.active_host in str(header.render())
    assert app.return_code in (None, 0)
