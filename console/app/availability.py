"""May an action run on the active host now: the footer, the palette and every key ask here,
in the words of the one refusal policy (console/server/refusal.py)."""

from __future__ import annotations

from console.app.base import ConsoleBase
from console.app.bindings import BY_ID, HIDDEN_WHEN_UNAVAILABLE
from console.server.refusal import FLEET_REFUSED, HostFacts, refusal

# The dashboard's keys for the active host: on the fleet view (whose rows are every host) they
# are left out of the footer, and pressed they say to open a host first (the refusal policy).
FLEET_HIDDEN = FLEET_REFUSED


class Availability(ConsoleBase):
    def unavailable_reason(self, action_id: str) -> str | None:
        """Why the action cannot run on the active host now (console.server.refusal, the
        policy the session and the host lease use too); None: it can."""
        return refusal(action_id, self.host_facts(self.active_host))

    def host_facts(self, host: str) -> HostFacts:
        """What the refusal policy looks at, from `host`'s folded state and its tune."""
        state = self.state_of(host)
        tune = self.tunes.get(host)
        return HostFacts(
            connection=state.connection,
            server_state=state.server_state,
            sweep_running=state.sweep.running,
            ab_running=state.ab is not None and state.ab.running,
            tune_running=tune is not None and tune.running,
            profiles=len(self.profiles),
            hosts=len(self.host_names),
            replay=bool(self._replay_label(host)),
            fleet_view=self.current_mode == "fleet",
        )

    def footer_state(self, action_id: str) -> str:
        """How the footer shows an action now: "enabled", "disabled" (relevant, not now: greyed,
        and its key says why) or "hidden" (irrelevant now; its key still says why)."""
        if self.unavailable_reason(action_id) is None:
            return "enabled"
        hidden = HIDDEN_WHEN_UNAVAILABLE | (FLEET_HIDDEN if self.current_mode == "fleet"
                                            else frozenset())
        return "hidden" if action_id in hidden else "disabled"

    def run_action_id(self, action_id: str) -> None:
        self.call_later(self.run_action, BY_ID[action_id].action)

    def _refuse(self, action_id: str) -> bool:
        """Say why the action cannot run now (True), or nothing (False: it may)."""
        why = self.unavailable_reason(action_id)
        if why is None:
            return False
        self.notify(f"{BY_ID[action_id].description}: {why}", severity="warning", markup=False)
        return True
