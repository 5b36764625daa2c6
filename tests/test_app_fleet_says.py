"""What the fleet overview says that it once hid (issue 41, item 8): at 120 columns the
conclusion columns (sglang, profile, last sweep, knee, top cause) are off to the right, and the
title names them; a host whose GPU agent fails says why once (one toast, its row's alert, the
detail line, the GPU panel), not a toast per retry and "waiting for the agent…" forever;
`plateau snapshot --screen fleet` renders the fleet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static

from console.cli import main
from console.session.events import ConnectionChanged, Problem
from tests.support.fleet_app import fleet_app, gpus
from tests.support.fleet_fixtures import gpu
from tests.test_app_fleet import _rows, _settle
from widgets.fleet_table import FleetTable
from widgets.gpu_panel import GpuPanel

CONCLUSIONS = "sglang, profile, last sweep, knee, top cause"
WHY = "agent exited 127: nvidia-smi: command not found"


def _columns_line(app: Any) -> str:
    line = app.screen.query_one("#fleet-columns", Static)
    return str(line.render()) if line.display else ""


async def test_at_120_columns_the_title_names_the_columns_off_screen(app_factory: Any) -> None:
    app = fleet_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await _settle(pilot)
        said = _columns_line(app)
        assert said.endswith(f"→ memory, throttle/XID, {CONCLUSIONS}"), said
        assert "← host" not in said
        table = app.screen.query_one(FleetTable)
        table.scroll_to(x=table.max_scroll_x, animate=False)
        await _settle(pilot)
        said = _columns_line(app)
        assert "← host, state" in said and "→" not in said.split(":", 1)[1], said
        await pilot.resize_terminal(300, 40)  # room for every column: no line
        await _settle(pilot)
        assert _columns_line(app) == ""


async def test_a_failing_gpu_agent_says_why_once(app_factory: Any) -> None:
    app = fleet_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await _settle(pilot)
        session = app.sessions["gpu-c1"]
        session.feed(ConnectionChanged("gpu-c1", "connected"))
        for backoff in (1, 2, 4, 8, 16):  # the supervisor's retries
            session.feed(Problem("gpu-c1", "gpu", f"gpu failed: {WHY}; retrying in {backoff}s"))
            await _settle(pilot)
        toasts = [n for n in app._notifications if "gpu failed" in n.message]
        assert len(toasts) == 1, [n.message for n in toasts]
        row = next(r for r in _rows(app) if r[0].endswith("gpu-c1"))
        assert row[2] == "gpu-agent"
        await pilot.press("down", "down", "down", "down")  # gpu-c1, the fifth row by host
        await pilot.pause()
        detail = str(app.screen.query_one("#fleet-detail", Static).render())
        assert detail == f"gpu-c1: GPU agent failed: {WHY} (retrying)"
        await pilot.press("enter")  # its dashboard
        await _settle(pilot)
        summary = str(app.screen.query_one(GpuPanel).query_one("#gpu-summary").render())
        assert summary == f"GPU agent failed: {WHY} (retrying)"
        session.feed(gpus("gpu-c1", gpu(0)))  # the agent is back
        await _settle(pilot)
        summary = str(app.screen.query_one(GpuPanel).query_one("#gpu-summary").render())
        assert "failed" not in summary and summary.startswith("1 ")
        assert app.sessions["gpu-c1"].state.gpu_error is None


@pytest.mark.slow
def test_snapshot_renders_the_fleet_screen(tmp_path: Path) -> None:
    out = tmp_path / "fleet.txt"
    assert main(["snapshot", "--demo", "--seed", "1", "--until", "ready", "--screen", "fleet",
                 "--size", "120x40", "--out", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert lines[0].strip().startswith("Fleet — 1 hosts"), lines[0]
    assert any(line.split()[1:3] == ["demo", "ready"] for line in lines[1:6]
               if len(line.split()) > 2), lines[:6]
