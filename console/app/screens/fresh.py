"""A mode screen's first showing without a second and third styling of what its mount styled.

Textual posts a ScreenResume to a new mode's screen twice (`_init_mode`, then `switch_mode`),
and each restyles every widget on it, which its mount has just styled with the same
stylesheet: two of the three stylings of the dashboard's widgets before the first frame. A
screen that has never been suspended, and whose stylesheet has not changed since it was made
(console.app.modes stamps the count of CSS updates it was made under), skips those restyles;
after a suspension (another screen shown meanwhile, a theme changed) it restyles as Textual
does.
"""

from __future__ import annotations

from textual import events, on
from textual.screen import Screen


class FreshScreen(Screen[None]):
    _suspended_once = False

    @on(events.ScreenSuspend)
    def _note_suspended(self) -> None:
        self._suspended_once = True

    @on(events.ScreenResume)
    def _keep_mounted_styles(self, event: events.ScreenResume) -> None:
        # Runs before Screen's own handler, which restyles (this class comes first in the
        # order Textual calls a message's handlers in).
        if not self._suspended_once and self._css_update_count == self.app._css_update_count:
            event.refresh_styles = False
