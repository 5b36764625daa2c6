"""May this action run on the host now? One policy, one set of words.

The console's footer and palette, its keys, the session (which refuses a command that raced
past the keys) and the host lease (whose `HostBusy` is what `plateau server restart` prints
while a sweep holds the host) all ask `refusal`, so a refusal reads the same everywhere. It
is a pure function of `HostFacts`, which each caller fills from what it knows: the console
from a host's folded state, the session from its own tasks, the lease from its holder.
"""

from __future__ import annotations

from dataclasses import dataclass

REPLAY = "this is a replay: it runs nothing on a host"
FLEET_VIEW = "this is the fleet view: enter opens a host's dashboard"
FLEET_REFUSED = frozenset({"restart", "sweep", "cancel-sweep", "flags", "ab", "maximize",
                           "gpu-processes", "tune", "fleet"})
"""The dashboard's keys for the active host: refused on the console's fleet view, whose rows
are every host (the footer leaves them out there)."""
HOLDS_HOST = frozenset({"restart", "sweep", "ab", "tune"})
"""Actions that hold the host's lease: one at a time."""
REPLAY_REFUSED = frozenset({"restart", "sweep", "ab", "flags", "cancel-sweep", "gpu-processes",
                            "tune"})
"""What a recording cannot do (issue 26.8): refused at the key with the reason, not asked for
and then dropped."""
_HOLDER_WORDS = {
    "sweep": "a sweep is running",
    "A/B": "an A/B is running",
    "tune": "a tune is running",
    "restart": "a restart is running",
    "start": "a server start is running",
    "stop": "a server stop is running",
}


@dataclass(frozen=True, slots=True)
class HostFacts:
    """What the policy looks at, for one host."""

    connection: str = "connected"
    """The host's connection (console.session.events.ConnectionStatus)."""
    server_state: str = "unknown"
    sweep_running: bool = False
    ab_running: bool = False
    tune_running: bool = False
    """The console's Tune view runs a tune on the host (console.session.tune_control)."""
    restart_running: bool = False
    """A restart of this session's own is under way (its phases may not have arrived yet)."""
    holder: str | None = None
    """The purpose of whatever else holds the host's lease ("sweep sim", "restart → p")."""
    profiles: int = 0
    hosts: int = 1
    replay: bool = False
    fleet_view: bool = False
    """The console shows the fleet (every host), not one host's dashboard."""


def refusal(action: str, facts: HostFacts) -> str | None:
    """Why `action` (a console.app.bindings action id) cannot run now; None: it can."""
    if facts.fleet_view and action in FLEET_REFUSED:
        return FLEET_VIEW
    if facts.replay and action in REPLAY_REFUSED:
        return REPLAY
    if action in HOLDS_HOST:
        why = holding(facts)
        if why is None and facts.connection != "connected":
            why = f"host {facts.connection}"
        if why is None and action == "ab" and facts.profiles < 2:
            why = "A/B needs two profiles"
        return why
    if action == "flags" and facts.connection != "connected":
        return f"host {facts.connection}"
    if action == "cancel-sweep" and facts.tune_running:
        # The tune's sweeps show as the host's (the chart draws them), but the tune owns
        # them: its view's x stops it at a safe point, the last good profile left running.
        return "a tune is running (T, then x stops it at a safe point)"
    if action == "cancel-sweep" and not (facts.sweep_running or facts.ab_running):
        return "no sweep or A/B is running"
    if action in ("next-host", "prev-host", "hosts") and facts.hosts < 2:
        return "only one host configured"
    return None


def holding(facts: HostFacts) -> str | None:
    """What holds the host now, in the words a refusal uses; None: nothing."""
    if facts.tune_running:
        return "a tune is running"
    if facts.ab_running:
        return "an A/B is running"
    if facts.sweep_running:
        return "a sweep is running"
    if facts.server_state in ("starting", "stopping"):
        return f"server is {facts.server_state}"
    if facts.restart_running:
        return "a restart is running"
    if facts.holder is not None:
        return held_by(facts.holder)
    return None


def held_by(purpose: str) -> str:
    """A lease holder's purpose ("sweep sim", "A/B a vs b", "restart → p") as refusal words."""
    first = purpose.split(" ", 1)[0]
    return _HOLDER_WORDS.get(first, f"{purpose} is running")
