"""HostState's folding of the status poll's ServerUpdate events."""

from __future__ import annotations

from datetime import UTC, datetime

from console.session.events import ServerUpdate
from console.session.state import HostState

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def test_the_polls_usual_answer_changes_nothing_and_redraws_nothing() -> None:
    """Every host is polled every 2 s; the same answer again is no news (64 hosts made it
    ~30 redraw requests a second), while any changed field is."""
    state = HostState("h", clock=lambda: T0)
    ready = ServerUpdate("h", "ready", version="0.5.23", profile="p", since=T0, pid=7)
    assert state.apply(ready) == ("server", "events")
    revision = dict(state.revision)
    assert state.apply(ready) == ()
    # a liveness-only poll carries no version: still nothing new
    assert state.apply(ServerUpdate("h", "ready", profile="p", since=T0, pid=7)) == ()
    assert state.revision == revision
    slow = ServerUpdate("h", "ready", version="0.5.23", profile="p", since=T0,
                        detail="not answering HTTP", pid=7)
    assert state.apply(slow) == ("server",)
    assert state.server_detail == "not answering HTTP"
    assert state.apply(ready) == ("server",)  # the detail cleared again
    assert state.apply(ServerUpdate("h", "ready", version="0.5.24", since=T0)) == ("server",)
    assert state.server_version == "0.5.24"
    assert state.apply(ServerUpdate("h", "stopped")) == ("server", "events")
