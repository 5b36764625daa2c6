"""What `plateau demo` does before its first frame (issue 19 item 5): the layout first; the
hosts' sessions start after it (their data then fills the frame in), and the start-up's
paused garbage collection resumes."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from console.gc_policy import gc_paused
from tests.test_app_layout import _settle


async def test_sessions_start_once_the_layout_is_drawn(app_factory: Any) -> None:
    app = app_factory()
    session = app.active_session
    seen: dict[str, Any] = {}
    start = session.start

    async def recording_start() -> None:
        screen = app.screen
        seen["screen"] = type(screen).__name__
        seen["header"] = bool(screen.query("#header")) and screen.is_mounted
        await start()

    session.start = recording_start
    async with app.run_test(size=(160, 48)) as pilot:
        await _settle(pilot)
        assert seen == {"screen": "DashboardScreen", "header": True}
        # ...and what the start brought is on the screen (it was drawn before).
        assert app.active_state.server_state == "ready"
        assert "READY" in str(app.screen.query_one("#header").render())


async def test_collection_paused_for_start_up_resumes_at_the_first_frame(
    app_factory: Any,
) -> None:
    app = app_factory()
    with gc_paused():
        assert not gc.isenabled()
        async with app.run_test(size=(80, 24)) as pilot:
            await _settle(pilot)
            assert gc.isenabled()  # the app resumed it, not the end of the command
    assert gc.isenabled()


def test_collection_resumes_when_the_command_fails() -> None:
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("before any frame")
    assert gc.isenabled()
