"""A local command cut off by a cancel (the console exiting mid-command) leaves nothing for the
garbage collector: before, its subprocess transport was closed by __del__ after the loop had
closed, and Python printed `RuntimeError: Event loop is closed` at exit."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import sys
from pathlib import Path
from typing import Any

from console import aio
from console.host.local import LocalTransport


def test_a_cancelled_command_is_closed_while_the_loop_lives(tmp_path: Any) -> None:
    pid_file = tmp_path / "pid"
    unraisable: list[Any] = []

    async def cut_off() -> None:
        transport = LocalTransport("exit-test")
        with contextlib.suppress(TimeoutError):
            await aio.wait_for(
                transport.run(["sh", "-c", f'echo $$ > "{pid_file}"; exec sleep 30']), 1.0)

    previous = sys.unraisablehook
    sys.unraisablehook = unraisable.append
    try:
        asyncio.run(cut_off())
        gc.collect()
    finally:
        sys.unraisablehook = previous
    assert [u.exc_value for u in unraisable] == []
    status = Path(f"/proc/{int(pid_file.read_text())}/status")
    with contextlib.suppress(FileNotFoundError):  # gone, or at most a zombie: not running
        assert "State:\tZ" in status.read_text(), "the cut-off command is still running"
