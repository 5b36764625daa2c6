"""The host commands (restart, sweep, A/B, cancel, tune and its stop, a GPU process's signal)
from key to session: the key is refused with the reason or confirmed, then posted as an intent
(console.app.messages), and each intent is handed to its host's session in a worker (nothing
here waits on the network), by its one handler below. History's `m` marks are kept here too."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import on

from console.app.availability import Availability
from console.app.messages import (
    ABRequested,
    CancelRequested,
    GpuSignalRequested,
    RestartRequested,
    RunMarkToggled,
    SweepRequested,
    TuneRequested,
    TuneStopRequested,
)
from console.errors import PlateauError
from console.session.protocol import Session
from console.session.state import current_profile

if TYPE_CHECKING:
    from console.gpu.processes import GpuProcessRow


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

    @on(TuneRequested)
    def _tune_requested(self, intent: TuneRequested) -> None:
        """Begin the tune (its store and the host's bench opened now: a host that cannot tune
        says why, nothing started) and run its job in a worker."""
        from console.session.tune_control import begin_tune, control_of

        request = intent.request
        session = self.sessions[intent.host]
        try:
            job = begin_tune(control_of(self.tunes, intent.host), session, request,
                             self.config.profiles[request.profile],
                             store_path=self.store_path, profiles_dir=self.profiles_dir,
                             bench_for=self.tune_bench_for,
                             on_saved=lambda name, p: self.add_profile(name, p, persist=False),
                             saveable=self._saveable)
        except Exception as exc:  # not connected, a replay: said, nothing started
            said = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            self.notify(f"Tune: {said}", severity="warning", markup=False)
            return
        self.run_worker(job, group="tune", exit_on_error=False,
                        description=f"tune {request.profile} on {intent.host}")

    @on(TuneStopRequested)
    def _tune_stop_requested(self, intent: TuneStopRequested) -> None:
        from console.session.tune_control import control_of

        if not control_of(self.tunes, intent.host).stop():
            self.notify("Stop tune: no tune is running", severity="warning", markup=False)

    @on(GpuSignalRequested)
    def _gpu_signal_requested(self, intent: GpuSignalRequested) -> None:
        self._hand_over(intent, f"signal pid {intent.row.process.pid}",
                        self._signal_gpu_process(self.sessions[intent.host], intent.row))

    async def _signal_gpu_process(self, session: Session, row: GpuProcessRow) -> None:
        from console.gpu.processes import send_signal

        # The host's own connection (HostSession.transport): the signal goes as the operator.
        transport = session.transport
        if transport is None:
            self.app_note("gpu", f"{session.host.name}: not connected; nothing sent", "warning")
            return
        try:
            outcome = await send_signal(transport, row)
        except PlateauError as exc:
            self.app_note("gpu", str(exc), "error")
            return
        self.app_note("gpu", outcome, "warning")  # "warning": shown, and kept in the log

    @on(RunMarkToggled)
    def _run_mark_toggled(self, message: RunMarkToggled) -> None:
        """History's `m`: two marked runs at most, the newest mark kept."""
        if message.run_id in self.marked_runs:
            self.marked_runs.remove(message.run_id)
        else:
            self.marked_runs[:] = [*self.marked_runs, message.run_id][-2:]
        self._render_screen(self.screen, self.active_host, ("marks",))
