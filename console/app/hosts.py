"""Which host the console shows: `]` / `[` / `H` switch the active host, and the hosts whose
figures are on screen sample at the full rate, the others slower (fleet pacing)."""

from __future__ import annotations

from collections.abc import Sequence

from console.app.availability import Availability
from console.app.contract import HostView


class HostSwitching(Availability):
    def set_on_screen_hosts(self, hosts: Sequence[str], *, rows: bool = False) -> None:
        """These hosts' figures are on screen: they sample at the full rate, the others at
        `ui.offscreen_interval_s` (HostSession.set_pace). `rows`: shown as fleet rows only."""
        self.on_screen_hosts = set(hosts)
        for name, session in self.sessions.items():
            session.set_pace(name in self.on_screen_hosts, in_detail=not rows)

    def action_next_host(self, step: int) -> None:
        if self._refuse("next-host" if step > 0 else "prev-host"):
            return
        index = self.host_names.index(self.active_host)
        self.switch_host(self.host_names[(index + step) % len(self.host_names)])

    def action_pick_host(self) -> None:
        if self._refuse("hosts"):
            return
        from console.app.screens.modals import HostPicker

        hosts = [(n, self.state_of(n).connection) for n in self.host_names]

        def picked(name: str | None) -> None:
            if name:
                self.switch_host(name)

        self.push_screen(HostPicker(hosts, self.active_host), picked)

    def switch_host(self, name: str) -> None:
        if name not in self.sessions or name == self.active_host:
            return
        self.active_host = name
        if self.current_mode != "fleet":
            self.set_on_screen_hosts([name])
        screen = self.screen
        if isinstance(screen, HostView):
            screen.render_host(self.active_state, None)
        self.refresh_bindings()
