"""The host's GPU processes (`K`): list them, and send SIGTERM to one of the operator's own
after a confirmation (posted as GpuSignalRequested; console/app/intents.py sends it over the
host's own connection). Another user's are listed but not choosable; a simulated host (the
demo) refuses outright."""

from __future__ import annotations

from typing import TYPE_CHECKING

from console.app.availability import Availability
from console.app.bindings import BY_ID
from console.app.messages import GpuSignalRequested

if TYPE_CHECKING:
    from console.gpu.processes import GpuProcessRow


class GpuProcessActions(Availability):
    def action_gpu_processes(self) -> None:
        """List the host's GPU processes; one of the operator's own can be sent SIGTERM after
        a confirmation. Another user's are listed but not choosable; a simulated host (the
        demo) refuses outright."""
        from console.app.screens.gpu_processes import ProcessPicker
        from console.app.screens.modals import ConfirmScreen
        from console.gpu.processes import process_rows

        if self._refuse("gpu-processes"):
            return
        session = self.active_session
        state = session.state
        simulated = bool(session.host.sim_state_file)
        rows = process_rows(state.gpu_sample, state.gpu_header, simulated=simulated)
        description = BY_ID["gpu-processes"].description
        if simulated:
            self.notify(f"{description}: the demo never signals processes", markup=False,
                        severity="warning")
            return
        if not rows:
            self.notify(f"{description}: no GPU processes on {session.host.name}", markup=False)
            return

        def confirmed(row: GpuProcessRow, ok: bool | None) -> None:
            if ok:
                self.post_message(GpuSignalRequested(session.host.name, row))

        def picked(row: GpuProcessRow | None) -> None:
            if row is None or row.refusal is not None:
                return
            question = (f"Send SIGTERM to pid {row.process.pid} on {session.host.name}?\n\n"
                        f"{row.label}")
            self.push_screen(ConfirmScreen(question), lambda ok: confirmed(row, ok))

        self.push_screen(ProcessPicker(session.host.name, rows), picked)
