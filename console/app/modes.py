"""The console's screens as Textual modes: each made when first shown, the table views and the
fleet and tune views imported only then (the first frame, the dashboard, does not pay for
them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.screen import Screen

from console.app.screens.dashboard import DashboardScreen

SCREENS = ("dashboard", "history", "compare", "topology", "events", "config", "why", "tune",
           "fleet")


def _mode_screen(make: Callable[[], Screen[Any]]) -> Callable[[], Screen[Any]]:
    """A mode's screen, made when the mode is first shown, counted as styled: Textual re-parses
    every stylesheet and restyles the app twice for a new mode's screen (`_init_mode`, then
    `switch_mode`) when its count of CSS updates is behind the app's. A new screen without CSS
    of its own is styled as its widgets mount; a pending theme change still restyles it (issue
    19 item 5: two of the three stylesheet parses before the first frame)."""

    def made() -> Screen[Any]:
        screen = make()
        if hasattr(screen, "_css_update_count"):
            screen._css_update_count = screen.app._css_update_count
        return screen

    return made


def _view_screen(name: str) -> Callable[[], Screen[Any]]:
    """A table screen of console.app.screens.views, imported when first shown: the first frame
    (the dashboard) does not pay for those screens, their widgets and what fills them
    (stored runs, comparisons, diagnoses)."""

    def make() -> Screen[Any]:
        from console.app.screens import views

        screen: Screen[Any] = getattr(views, name)()
        return screen

    return _mode_screen(make)


def _fleet_screen() -> Screen[Any]:
    from console.app.screens.fleet import FleetScreen

    return FleetScreen()


def _tune_screen() -> Screen[Any]:
    """The Tune view (console.app.screens.tune), imported when first shown."""
    from console.app.screens.tune import TuneScreen

    return TuneScreen()


MODES: dict[str, Callable[[], Screen[Any]]] = {
    "dashboard": _mode_screen(DashboardScreen),
    "history": _view_screen("HistoryScreen"),
    "compare": _view_screen("CompareScreen"),
    "topology": _view_screen("TopologyScreen"),
    "events": _view_screen("EventsScreen"),
    "config": _view_screen("ConfigScreen"),
    "why": _view_screen("WhyScreen"),
    "fleet": _mode_screen(_fleet_screen),
    "tune": _mode_screen(_tune_screen),
}
"""PlateauApp.MODES: every name of SCREENS."""
