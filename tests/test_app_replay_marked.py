"""A replay looks like one (issue 26, item 8): the header says REPLAY and when it was recorded
on every screen, uptime and event times are the recorded ones (not this machine's clock), and
actions are refused at the key with the reason."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from console.app.launch import replay_app
from console.app.screens.modals import ConfirmScreen
from console.config_models import HostConfig
from console.session.events import ConnectionChanged, Problem, ServerUpdate
from console.session.recording import RecordedEvent, Recording
from tests.support.app_fixtures import gpu_header, gpu_sample
from widgets.header import PlateauHeader

STARTED = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def _recording() -> Recording:
    from console.session.events import GpuUpdate, TopologyUpdate

    host = "box"
    events = [
        RecordedEvent(0.0, ConnectionChanged(host, "connected")),
        RecordedEvent(1.0, ServerUpdate(host, "ready", version="0.5.23", profile="triton-moe")),
        RecordedEvent(2.0, TopologyUpdate(host, gpu_header())),
        RecordedEvent(30.0, GpuUpdate(host, gpu_sample())),
        RecordedEvent(3601.0, Problem(host, "log", "a warning from the recording", "warning")),
    ]
    return Recording(hosts=[HostConfig(name=host, local=True)],
                     started_at=STARTED.timestamp(), events=events)


async def _played(pilot: Any, sessions: list[Any]) -> None:
    """Until the recording has played and the dashboard has laid itself out for its GPUs
    (a deadline, not a count of pauses: a loaded machine plays it slower)."""
    import time

    def drawn() -> bool:
        if not (all(s.finished for s in sessions) and sessions[0]._queue.empty()):
            return False
        sample = pilot.app.active_state.gpu_sample
        screen = pilot.app.screen
        return sample is not None and getattr(screen, "_gpu_count", None) == len(sample.gpus)

    deadline = time.monotonic() + 60
    while not drawn() and time.monotonic() < deadline:
        await pilot.pause(0.02)
    await pilot.pause()


def _header(app: Any) -> str:
    return str(app.screen.query_one(PlateauHeader).render())


async def test_a_replay_is_marked_shows_recorded_times_and_refuses_actions() -> None:
    app, sessions = replay_app(_recording(), speed=0)
    app.tick_seconds = None
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await _played(pilot, sessions)
        header = _header(app)
        assert "REPLAY 2026-01-02 03:04Z" in header, header
        # Ready at +1 s, the last event at +3601 s: an hour of recorded uptime.
        assert "READY 01:00:00" in header, header
        state = app.active_state
        warning = next(e for e in state.events if "a warning from the recording" in e.message)
        assert warning.at == datetime(2026, 1, 2, 4, 4, 6, tzinfo=UTC)
        for key in ("r", "s", "a", "f"):
            await pilot.press(key)
            await pilot.pause()
            assert not isinstance(app.screen, ConfirmScreen)
        said = [str(n.message) for n in app._notifications]
        assert "Restart: this is a replay: it runs nothing on a host" in said, said
        assert "Sweep: this is a replay: it runs nothing on a host" in said, said
        assert sessions[0].commands == []  # nothing was asked of the session
        await pilot.press("h")
        await pilot.pause()
        assert "REPLAY 2026-01-02 03:04Z" in _header(app)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_replay_snapshot(snap_compare: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Any,
                         size: tuple[int, int]) -> None:
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")
    app, sessions = replay_app(_recording(), speed=0)
    app.tick_seconds = None

    async def run_before(pilot: Any) -> None:
        await _played(pilot, sessions)

    assert snap_compare(app, terminal_size=size, run_before=run_before)
