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


async def test_a_failing_agent_is_the_states_gpu_error_until_a_sample() -> None:
    """The supervisor's own words ("gpu failed: X; retrying in 1s") are what the GPU panel
    and the fleet row read as the agent's failure (issue 41.8)."""
    import asyncio
    import contextlib

    from tests.support.fleet_app import gpus
    from tests.support.fleet_fixtures import gpu

    loaded = app_config()
    session = HostSession(loaded.config.hosts[0], loaded.config)
    session.transport = object()  # type: ignore[assignment]  # the loop below uses none

    async def failing(_transport: object) -> None:
        raise RuntimeError("agent exited 127: nvidia-smi: command not found")

    task = asyncio.ensure_future(session._supervise("gpu", failing))
    for _ in range(100):
        await asyncio.sleep(0)
        if session.state.gpu_error is not None:
            break
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert session.state.gpu_error == "agent exited 127: nvidia-smi: command not found"
    session.state.apply(gpus(session.host.name, gpu(0)))
    assert session.state.gpu_error is None
