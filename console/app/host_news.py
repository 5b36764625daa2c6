"""A host's news on screen: each `HostChanged` (the pump's coalesced message, console.app.pumps)
redraws the aspects that changed on the visible screen, in place; warnings and errors of the
host's event log become notifications; an unknown host key asks its question; the clock's tick
refreshes the header."""

from __future__ import annotations

from textual.app import ScreenStackError

from console.app.base import severity
from console.app.contract import HostView
from console.app.host_keys import HostKeyPrompts
from console.app.messages import HostChanged
from console.session.state import EventRecord, HostState, retry_reason


class HostNews(HostKeyPrompts):
    def on_host_changed(self, message: HostChanged) -> None:
        if not self.is_running:
            # Shutting down: Textual prunes the screens' widgets while they are still
            # attached, and live sessions keep reporting until they are closed.
            return
        state = self.sessions[message.host].state
        try:
            screen = self.screen
        except ScreenStackError:
            return  # the app is exiting while live sessions still report
        if "events" in message.aspects:
            self._notify_new(state)
        if "host-key" in message.aspects:
            self.ask_host_key(message.host)
        self._render_screen(screen, message.host, message.aspects)
        if message.host == self.active_host and {"server", "sweep", "connection"} & set(
            message.aspects
        ):
            self.refresh_bindings()

    def _session_started(self, host: str) -> None:
        """The screen was drawn before the session started: show what its start brought."""
        try:
            screen = self.screen
        except ScreenStackError:
            return
        self._render_screen(screen, host, None)
        if host == self.active_host:
            self.refresh_bindings()

    def _notify_new(self, state: HostState) -> None:
        rev = state.revision.get("events", 0)
        seen = self._notified.get(state.host, 0)
        self._notified[state.host] = rev
        new = min(rev - seen, len(state.events))
        if new <= 0:
            return
        for record in list(state.events)[-new:]:
            if record.source == "host-key" and record.level == "warning":
                continue  # an unknown key: the question on screen says it
            if record.level in ("warning", "error") and self._news(record):
                self.notify(
                    record.message,
                    title=f"{record.host}: {record.source}",
                    severity=severity(record.level),
                    markup=False,
                    timeout=8 if record.level == "error" else 5,
                )

    def _news(self, record: EventRecord) -> bool:
        """Whether the record is news: a supervised loop retrying the same failure (only its
        backoff changes) is said once, until that source says something else."""
        key = (record.host, record.source)
        reason = retry_reason(record.message)
        if reason == record.message:  # not a retry: the source moved on
            self._retry_said.pop(key, None)
            return True
        if self._retry_said.get(key) == reason:
            return False
        self._retry_said[key] = reason
        return True

    def _tick(self) -> None:
        try:
            screen = self.screen
        except ScreenStackError:
            return
        # A screen pushed but not mounted yet has no header to refresh; its on_mount renders
        # the state (on a loaded machine the tick won that race: NoMatches: PlateauHeader).
        # One being torn down has lost its header first: refresh_header skips it.
        if isinstance(screen, HostView) and screen.is_mounted:
            screen.refresh_header(self.active_state)
