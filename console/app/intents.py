"""The host commands (restart, sweep, A/B, cancel) from key to session: the key is refused with
the reason or confirmed, then posted as an intent (console.app.messages), and each intent is
handed to its host's session in a worker (nothing here waits on the network). History's `m`
marks are kept here too."""

from __future__ import annotations

from textual import on

from console.app.availability import Availability
from console.app.messages import (
    ABRequested,
    CancelRequested,
    RestartRequested,
    RunMarkToggled,
    SweepRequested,
)
from console.session.protocol import Session
from console.session.state import current_profile


class HostIntents(Availability):
    def action_restart(self) -> None:
        session = self.active_session
        self.request_restart(session, current_profile(session.state, session.host))

    def request_restart(
        self, session: Session, profile: str | None, command: str | None = None
    ) -> None:
        """The one restart path (the `r` key and the flags editor): refuse while a sweep or
        A/B holds the host, else confirm, then hand it to the session."""
        if self._refuse("restart"):
            return
        question = f"Restart the server on {session.host.name} with profile {profile or '(none)'}?"
        if command:
            question += f"\n\n{command}"

        def confirmed(ok: bool | None) -> None:
            if ok:
                self.post_message(RestartRequested(session.host.name, profile))

        from console.app.screens.modals import ConfirmScreen

        self.push_screen(ConfirmScreen(question), confirmed)

    def action_sweep(self) -> None:
        if not self._refuse("sweep"):
            self.post_message(SweepRequested(self.active_host, "default"))

    def action_cancel_sweep(self) -> None:
        if not self._refuse("cancel-sweep"):
            self.post_message(CancelRequested(self.active_host))

    # -- intents: each handed to its host's session, in a worker (nothing here waits) -------

    @on(RestartRequested)
    def _restart_requested(self, intent: RestartRequested) -> None:
        self._hand_over(intent, "restart", self.sessions[intent.host].restart(intent.profile))

    @on(SweepRequested)
    def _sweep_requested(self, intent: SweepRequested) -> None:
        self._hand_over(intent, "sweep", self.sessions[intent.host].start_sweep(intent.preset))

    @on(ABRequested)
    def _ab_requested(self, intent: ABRequested) -> None:
        self._hand_over(intent, "A/B", self.sessions[intent.host].start_ab(intent.request))

    @on(CancelRequested)
    def _cancel_requested(self, intent: CancelRequested) -> None:
        self._hand_over(intent, "cancel", self.sessions[intent.host].cancel_sweep())

    @on(RunMarkToggled)
    def _run_mark_toggled(self, message: RunMarkToggled) -> None:
        """History's `m`: two marked runs at most, the newest mark kept."""
        if message.run_id in self.marked_runs:
            self.marked_runs.remove(message.run_id)
        else:
            self.marked_runs[:] = [*self.marked_runs, message.run_id][-2:]
        self._render_screen(self.screen, self.active_host, ("marks",))
