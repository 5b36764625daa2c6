"""The console on live hosts: the real app (headless) with HostSessions on the simulator,
through a real sshd or the local transport. Keys are pressed; state and messages are checked.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from textual.message import Message
from textual.widgets import Checkbox, Input, Select

from console.app.messages import CommandSent
from console.app.screens.modals import ABPicker, ConfirmScreen
from console.app.screens.views import CompareScreen
from console.app.screenshot import export_text
from console.config_models import HostConfig
from console.gpu.format import short_name
from console.host.ssh import SshTransport
from console.server.lease import HostBusy
from console.session import adapters
from console.session.profiles import load_saved_profiles
from console.store.db import RunStore
from tests.support.app_fixtures import TINY_SWEEP, wait_until
from widgets.flags_editor import FlagsEditor
from widgets.header import PlateauHeader


def _sent(messages: list[Message]) -> list[tuple[str, str, str | None]]:
    return [(m.host, m.command, m.argument) for m in messages if isinstance(m, CommandSent)]


def _events(app: Any) -> list[str]:
    return [f"{r.source}: {r.message}" for r in app.all_events()]


@pytest.mark.slow
async def test_console_over_real_sshd(live_console: Any, sshd: Any, tmp_path: Path) -> None:
    """Connect over real OpenSSH, start the simulated server through the lifecycle, show GPU
    rows, follow the log, scrape /metrics, run a sweep from `s` holding the host lease."""
    host = HostConfig(
        name="app-ssh", address="127.0.0.1", port=sshd.port, user=sshd.user,
        identity_files=[str(sshd.client_key)], known_hosts_file=str(sshd.known_hosts),
        python=sys.executable,
    )
    live = live_console(host)
    app, session = live.app, live.session
    state = session.state
    messages: list[Message] = []
    async with app.run_test(size=(160, 48), message_hook=messages.append) as pilot:
        await wait_until(pilot, lambda: state.server_state == "ready", "server ready", 60)
        assert isinstance(session.transport, SshTransport)
        assert state.connection == "connected"
        await wait_until(pilot, lambda: state.profile == "cutlass-moe"
                         and session.record is not None, "the status poll")
        # GPU rows from the simulated backend, on screen
        await wait_until(pilot, lambda: state.gpu_sample is not None
                         and len(state.gpu_sample.gpus) > 0, "GPU samples")
        shown = f"{short_name(state.gpu_sample.gpus[0].name)[:12]}"
        await wait_until(pilot, lambda: shown in export_text(app), "GPU rows on screen")
        # the log is followed
        await wait_until(pilot, lambda: any("fired up and ready" in e.text for e in state.log),
                         "the ready line in the log view")
        # /metrics (the profile has --enable-metrics) feeds the server strip
        await wait_until(pilot, lambda: state.server_stats is not None
                         and state.server_stats.source == "metrics", "a /metrics scrape")
        # a sweep from the key; it holds the host's lease, so a restart is refused meanwhile
        await pilot.press("s")
        await wait_until(pilot, lambda: state.sweep.running, "the sweep to start", 20)
        assert (adapters.host_busy("app-ssh") or "").startswith("sweep")
        assert app.footer_state("restart") == "disabled"  # greyed out in the footer
        with pytest.raises(HostBusy):
            await adapters.restart_server(session.transport, host, live.config, "triton-moe",
                                          lambda _e: None)
        await session.restart("triton-moe")
        assert any("restart refused" in e for e in _events(app))
        await wait_until(pilot, lambda: not state.sweep.running, "the sweep to finish", 60)
        assert state.sweep.last_ok, state.sweep.detail
        assert [p.status for p in state.sweep.points] == ["ok", "ok"]
        assert _sent(messages) == [("app-ssh", "sweep", "default")]
        # the lease is released on the host too (a round trip after the sweep's last event)
        await wait_until(pilot, lambda: adapters.host_busy("app-ssh") is None, "the lease", 20)
    with RunStore(live.root / "runs.db") as store:
        (run,) = store.list_runs()
        assert run.meta.host == "app-ssh" and run.steps_ok == 2


@pytest.mark.slow
async def test_flags_editor_save_and_restart(live_console: Any) -> None:
    """f: the host's discovered flags, a diff against the running server; ctrl+s saves a
    profile (profiles.d/<name>.toml), no restart; change one flag and restart is f, t, ctrl+r,
    y (one confirmation, showing the effective command line)."""
    live = live_console()
    app, session = live.app, live.session
    state = session.state
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: state.server_state == "ready", "server ready")
        await pilot.press("f")
        await wait_until(pilot, lambda: isinstance(app.screen, FlagsEditor), "the flags editor")
        editor = app.screen
        await pilot.pause()
        assert editor.running is not None  # diffed against the running server's argv
        assert editor.running["moe-runner-backend"] == "cutlass"
        select = editor.query_one("#flag-moe-runner-backend", Select)
        assert "triton" in [value for _label, value in select._options]  # discovered choices
        editor.query_one("#profile-name", Input).value = "triton-tp2"
        select.focus()
        await pilot.press("t")
        assert select.value == "triton"
        await pilot.press("ctrl+s")  # save as profile: written, nothing restarts
        await wait_until(pilot, lambda: not isinstance(app.screen, FlagsEditor), "saved")
        assert "triton-tp2" in session.config.profiles and state.server_state == "ready"
        # Change one flag and restart: four keys.
        await pilot.press("f")
        await wait_until(pilot, lambda: isinstance(app.screen, FlagsEditor), "the editor again")
        await pilot.pause()
        await pilot.press("t")
        await pilot.pause()
        # These flags are triton-moe's (and the copy just saved): the restart is named after
        # the profile they are, not "cutlass-moe-2" (issue 26.10).
        name = app.screen.query_one("#profile-name", Input).value
        assert name == "triton-moe"
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "confirmation")
        assert "--moe-runner-backend triton" in app.screen.question
        assert "~ --moe-runner-backend cutlass -> triton" in app.screen.question
        await pilot.press("y")
        await wait_until(
            pilot, lambda: session.record is not None and session.record.profile == name
            and state.server_state == "ready", f"the restart into {name}",
        )
        argv = session.record.argv
        assert argv[argv.index("--moe-runner-backend") + 1] == "triton"
    saved, problems = load_saved_profiles(live.profiles_dir)
    assert problems == []
    kept = app.config.profiles["triton-tp2"]
    # Saved: what the operator chose, not this simulated run's state file and free port.
    assert saved["triton-tp2"].flags == {k: v for k, v in kept.flags.items()
                                         if k != "sim-state-file"}
    assert saved["triton-tp2"].port == 30000 and kept.port != 30000
    assert saved["triton-tp2"].flags["moe-runner-backend"] == "triton"
    assert "cutlass-moe-2" not in saved and "cutlass-moe-2" not in app.config.profiles


@pytest.mark.slow
async def test_ab_from_the_app(live_console: Any) -> None:
    """a: pick A, B and a preset; the A/B runs in the background with progress in the header,
    then the chart overlays A and B and the compare screen shows the deltas."""
    live = live_console()
    app, session = live.app, live.session
    state = session.state
    messages: list[Message] = []
    async with app.run_test(size=(160, 48), message_hook=messages.append) as pilot:
        await wait_until(pilot, lambda: state.server_state == "ready", "server ready")
        await pilot.press("a")
        await wait_until(pilot, lambda: isinstance(app.screen, ABPicker), "the A/B picker")
        await pilot.pause()
        picker = app.screen
        assert "estimate \u2248 " in str(picker.query_one("#ab-estimate").render())
        picker.query_one("#ab-repeats", Input).value = "2"
        picker.query_one("#ab-interleave", Checkbox).value = False
        await pilot.pause()
        assert "4 restarts" not in str(picker.query_one("#ab-estimate").render())
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: state.ab is not None and state.ab.running, "A/B start")
        await pilot.pause()
        header = str(app.screen.query_one(PlateauHeader).render())
        assert "A/B cutlass-moe vs triton-moe" in header
        assert app.footer_state("restart") == "disabled"
        await wait_until(pilot, lambda: state.ab is not None and not state.ab.running,
                         "the A/B to finish", 60)
        assert state.ab.stage == "done", _events(app)[-5:]
        assert _sent(messages) == [
            ("app-live", "ab", "cutlass-moe vs triton-moe (default, x2)")]
        await pilot.pause()
        chart = app.screen.query_one("#sweep-view")
        assert [(r.label, len(r.steps)) for r in chart.runs] == [
            ("cutlass-moe", 4), ("triton-moe", 4)  # 2 levels x 2 repeats each
        ]
        assert any("triton-moe vs cutlass-moe, total tok/s: c=1 " in e for e in _events(app))
        await pilot.press("c")
        await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen), "compare")
        await pilot.pause()
        table = app.screen.query_one("#compare-table")
        assert table.row_count == 2
        note = str(app.screen.query_one("#compare-note").render())
        assert "A = cutlass-moe, B = triton-moe" in note and "2 repeat(s)" in note
        assert "verdict: B " in note and "moe-runner-backend cutlass \u2192 triton" in note


@pytest.mark.slow
async def test_ab_cancel_leaves_the_host_free(live_console: Any) -> None:
    slow = {**TINY_SWEEP, "concurrency": [1, 2, 4, 8], "output_len": 64}
    live = live_console(sweeps={"default": slow})
    app, session = live.app, live.session
    state = session.state
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: state.server_state == "ready", "server ready")
        await pilot.press("a")
        await wait_until(pilot, lambda: isinstance(app.screen, ABPicker), "the A/B picker")
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: state.ab is not None and state.ab.stage == "sweep-a"
                         and state.sweep.running, "sweep A", 30)
        assert app.footer_state("cancel-sweep") == "enabled"
        await pilot.press("x")
        await wait_until(pilot, lambda: not state.ab.running, "the cancel", 20)
        assert state.ab.stage == "cancelled"
        assert state.sweep.detail == "cancelled"
        await wait_until(pilot, lambda: adapters.host_busy("app-live") is None, "the lease", 20)
        assert app.footer_state("restart") == "enabled"


async def test_bench_serving_without_sglang_says_so(live_console: Any) -> None:
    python = "/usr/bin/python3"
    probe = subprocess.run([python, "-c", "import importlib.util as u, sys; "
                            "sys.exit(0 if u.find_spec('sglang') else 3)"], check=False)
    if probe.returncode != 3:
        pytest.skip(f"{python} is missing or has sglang")
    live = live_console(python=python, launch=False,
                        sweeps={"default": {**TINY_SWEEP, "engine": "bench-serving"}})
    app, state = live.app, live.session.state
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await wait_until(pilot, lambda: state.connection == "connected"
                         and state.server_state == "stopped", "connected")
        await pilot.press("s")
        await wait_until(pilot, lambda: any("needs SGLang" in e for e in _events(app)),
                         "the engine error")
        assert any("needs SGLang" in n.message for n in app._notifications)
        assert not state.sweep.running
        await wait_until(pilot, lambda: adapters.host_busy("app-live") is None,
                         "the lease released", 20)


async def test_metrics_failures_are_reported_once(
    sim_factory: Any, monkeypatch: pytest.MonkeyPatch, local_transport: Any, tmp_path: Path
) -> None:
    """/metrics failing (here: a server without metrics) is one warning, not one per scrape;
    when it works again that is said once and the strip gets metrics stats."""
    from console.server.records import LaunchRecord
    from console.session import service
    from console.session.events import ServerStatus
    from console.session.service import HostSession
    from tests.support.app_fixtures import app_config

    monkeypatch.setattr(service, "METRICS_PERIOD_S", 0.1)
    plain = sim_factory()
    metered = sim_factory("--enable-metrics")
    loaded = app_config()
    host = loaded.config.hosts[0].model_copy(update={"run_dir": str(tmp_path)})
    session = HostSession(host, loaded.config)

    def record(sim: Any) -> LaunchRecord:
        return LaunchRecord(pid=sim.pid, pgid=sim.pid, port=sim.port, profile="x",
                            argv=[*sim.argv, "--enable-metrics"])

    session.emit(ServerStatus(host.name, "ready"))
    session.record = record(plain)
    loop = asyncio.create_task(session._metrics_loop(local_transport))
    try:
        await asyncio.sleep(1.0)
        warnings = [r for r in session.state.events if r.source == "metrics"]
        assert len(warnings) == 1 and "404" in warnings[0].message
        session.record = record(metered)
        for _ in range(100):
            stats = session.state.server_stats
            if stats is not None and stats.source == "metrics":
                break
            await asyncio.sleep(0.05)
        assert session.state.server_stats is not None
        assert session.state.server_stats.source == "metrics"
        notes = [r.message for r in session.state.events if r.source == "metrics"]
        assert len(notes) == 2 and "works again" in notes[1]
    finally:
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)
