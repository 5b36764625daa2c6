"""GPU processes (issue 17 item 9): who may be signalled (the operator's own only, never on a
simulated host's behalf), the kill argv, a real signal through a real LocalTransport to a real
child process, and the console's K key: list, refuse, confirm, send."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from typing import Any

import pytest
from textual.message import Message

from console.app.messages import GpuSignalRequested, HostIntent
from console.app.screens.gpu_processes import ProcessPicker
from console.app.screens.modals import ConfirmScreen
from console.gpu.models import GpuHeader, GpuProcess, GpuSample
from console.gpu.processes import (
    GpuProcessRow,
    ProcessSignalError,
    kill_argv,
    process_rows,
    refusal,
    send_signal,
)

ME = os.getuid()
OTHER = ME + 1000


def header(uid: int | None = ME) -> GpuHeader:
    return GpuHeader.model_validate({"backend": "nvml", "host": {"uid": uid, "user": "me"}})


def sample(*procs: dict[str, Any]) -> GpuSample:
    return GpuSample.model_validate({"gpus": [
        {"index": 0, "processes": [p for p in procs if p.get("gpu", 0) == 0]},
        {"index": 1, "processes": [p for p in procs if p.get("gpu") == 1]},
    ]})


def test_only_the_operators_own_processes_may_be_signalled() -> None:
    mine = GpuProcess(pid=4242, uid=ME, user="me", cmd="python3 -m sglang.launch_server")
    theirs = GpuProcess(pid=4343, uid=OTHER, user="alice")
    unknown = GpuProcess(pid=4444)
    assert refusal(mine, header(), simulated=False) is None
    assert refusal(theirs, header(), simulated=False) == "owned by alice, not me"
    assert refusal(unknown, header(), simulated=False) == "its owner is not visible to the agent"
    assert refusal(mine, header(None), simulated=False) is not None  # operator unknown
    assert refusal(mine, None, simulated=False) is not None
    assert "demo never signals" in (refusal(mine, header(), simulated=True) or "")


def test_rows_list_own_processes_first_on_every_gpu() -> None:
    rows = process_rows(sample(
        {"pid": 20, "uid": OTHER, "user": "alice", "gpu": 0},
        {"pid": 30, "uid": ME, "user": "me", "gpu": 1, "cmd": "\x1b[31mred\x1b[0m"},
    ), header(), simulated=False)
    assert [(r.gpu, r.process.pid, r.refusal is None) for r in rows] == [
        (1, 30, True), (0, 20, False)]
    assert "\x1b" not in rows[0].label  # a command line from the host is text, not escapes


def test_kill_argv_is_one_process_and_a_known_signal() -> None:
    assert kill_argv(4242) == ["kill", "-TERM", "--", "4242"]
    assert kill_argv(4242, "SIGKILL") == ["kill", "-KILL", "--", "4242"]
    with pytest.raises(ValueError):
        kill_argv(1)
    with pytest.raises(ValueError):
        kill_argv(0)
    with pytest.raises(ValueError):
        kill_argv(4242, "HUP; rm -rf /")


async def test_signal_reaches_a_real_process_and_refusals_send_nothing(
    local_transport: Any,
) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        theirs = GpuProcessRow(0, GpuProcess(pid=child.pid, uid=OTHER), "owned by alice, not me")
        with pytest.raises(ProcessSignalError, match="owned by alice"):
            await send_signal(local_transport, theirs)
        assert child.poll() is None  # refused before anything was sent
        mine = GpuProcessRow(0, GpuProcess(pid=child.pid, uid=ME), None)
        outcome = await send_signal(local_transport, mine)
        assert f"SIGTERM to pid {child.pid}" in outcome
        assert await asyncio.to_thread(child.wait, 30) == -signal.SIGTERM
        with pytest.raises(ProcessSignalError, match="failed"):  # gone now: the host says so
            await send_signal(local_transport, mine)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


async def test_k_lists_processes_confirms_and_signals_own(
    app_factory: Any, local_transport: Any
) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    app = app_factory()
    messages: list[Message] = []
    try:
        async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
            await pilot.pause()
            session = app.active_session
            session.transport = local_transport  # the host's connection, as HostSession has
            session.state.gpu_header = header()
            session.state.gpu_sample = sample(
                {"pid": child.pid, "uid": ME, "user": "me", "cmd": "sleep", "gpu": 0},
                {"pid": 99999, "uid": OTHER, "user": "alice", "gpu": 1},
            )
            await pilot.press("K")
            await pilot.pause()
            picker = app.screen
            assert isinstance(picker, ProcessPicker)
            assert [r.refusal is None for r in picker.rows] == [True, False]
            await pilot.press("enter")  # the highlighted one: the operator's own
            await pilot.pause()
            assert isinstance(app.screen, ConfirmScreen)
            assert f"SIGTERM to pid {child.pid}" in app.screen.question
            await pilot.press("y")
            assert await asyncio.to_thread(child.wait, 30) == -signal.SIGTERM
            for _ in range(400):  # the worker notes the outcome once kill has returned
                if any(f"pid {child.pid}" in e.message for e in app.app_events):
                    break
                await pilot.pause(0.05)
            assert any(f"SIGTERM to pid {child.pid}" in e.message for e in app.app_events)
            # the confirmed signal went up as the one intent the app's handler sends
            (intent,) = [m for m in messages if isinstance(m, HostIntent)]
            assert isinstance(intent, GpuSignalRequested)
            assert (intent.host, intent.row.process.pid) == (session.host.name, child.pid)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


async def test_k_refuses_on_a_simulated_host(app_factory: Any) -> None:
    app = app_factory()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        session = app.active_session
        session.host = session.host.model_copy(update={"sim_state_file": "/tmp/x.json"})
        session.state.gpu_header = header()
        session.state.gpu_sample = sample({"pid": 4242, "uid": ME, "gpu": 0})
        await pilot.press("K")
        await pilot.pause()
        assert not isinstance(app.screen, ProcessPicker)
        assert any("demo never signals" in str(n.message) for n in app._notifications)
