"""The GPU agent's warnings reach the event log, each once (console/session/service.py)."""

from __future__ import annotations

from console.session.service import HostSession
from tests.support.app_fixtures import app_config


def test_agent_warnings_are_shown_once_in_the_event_log() -> None:
    loaded = app_config()
    session = HostSession(loaded.config.hosts[0], loaded.config)
    for _ in range(3):
        session._gpu_warning("GPU 0: NVLink all-links throughput refused")
    session._gpu_warning("sample failed: [bold]x[/]")
    shown = [(r.source, r.level, r.message) for r in session.state.events if r.source == "gpu"]
    assert shown == [
        ("gpu", "warning", "GPU agent: GPU 0: NVLink all-links throughput refused"),
        ("gpu", "warning", "GPU agent: sample failed: [bold]x[/]"),
    ]
