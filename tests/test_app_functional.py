"""Functional tests: press keys in the real app (ReplaySession data) and check messages/state."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from textual.message import Message

from console.app.app import SCREENS, PlateauApp
from console.app.messages import (
    CancelRequested,
    HostIntent,
    RestartRequested,
    SweepRequested,
)
from console.app.screens.modals import ConfirmScreen
from console.app.theming import THEME_DIR
from console.session.events import Problem
from tests.support.app_fixtures import app_config, demo_events, fixed_clock
from widgets.header import PlateauHeader


async def _settle(pilot: Any) -> None:
    await pilot.pause()
    await pilot.pause(0.05)


def _sent(messages: list[Message]) -> list[HostIntent]:
    """The intents the app handled (each hands its work to the host's session)."""
    return [m for m in messages if isinstance(m, HostIntent)]


async def test_sweep_key_and_keymap_remap(app_factory: Any) -> None:
    app = app_factory(keymap={"sweep": "w"})
    messages: list[Message] = []
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        await _settle(pilot)
        await pilot.press("s")  # the default key no longer sweeps
        await _settle(pilot)
        assert _sent(messages) == []
        await pilot.press("w")
        await _settle(pilot)
        (sweep,) = _sent(messages)
        assert isinstance(sweep, SweepRequested) and (sweep.host, sweep.preset) == (
            "demo", "default")
        assert app.active_session.commands == [("sweep", "default")]


async def test_restart_confirms_then_runs(app_factory: Any) -> None:
    app = app_factory()
    messages: list[Message] = []
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        await _settle(pilot)
        assert app.footer_state("restart") == "enabled"
        await pilot.press("r")
        await _settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await _settle(pilot)
        (restart,) = _sent(messages)
        assert isinstance(restart, RestartRequested)
        assert (restart.host, restart.profile) == ("demo", "cutlass-moe")
        assert app.active_session.commands == [("restart", "cutlass-moe")]  # the session did it


async def test_restart_disabled_while_sweep_runs(app_factory: Any) -> None:
    app = app_factory(sweep_running=True)
    messages: list[Message] = []
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        await _settle(pilot)
        assert app.active_state.sweep.running
        assert app.footer_state("restart") == "disabled"  # greyed out in the footer
        assert app.footer_state("cancel-sweep") == "enabled"
        await pilot.press("r")
        await _settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
        assert _sent(messages) == []
        await pilot.press("x")  # cancel the sweep instead
        await _settle(pilot)
        (cancel,) = _sent(messages)
        assert isinstance(cancel, CancelRequested) and cancel.host == "demo"
        assert app.active_session.commands == [("cancel-sweep", None)]


async def test_cancel_hidden_without_sweep(app_factory: Any) -> None:
    app = app_factory()
    async with app.run_test(size=(120, 40)) as pilot:
        await _settle(pilot)
        assert app.footer_state("cancel-sweep") == "hidden"


async def test_theme_cycles_and_is_selectable(app_factory: Any) -> None:
    app = app_factory(theme="plateau-light")
    async with app.run_test(size=(120, 40)) as pilot:
        await _settle(pilot)
        assert app.theme == "plateau-light"
        assert app.current_theme.variables["gpu-load-high"] == "#C62828"
        await pilot.press("ctrl+t")
        await _settle(pilot)
        assert app.theme != "plateau-light"
        assert app.theme in app.plateau_theme_names


async def test_panel_toggle_and_maximise(app_factory: Any) -> None:
    app = app_factory()
    async with app.run_test(size=(160, 48)) as pilot:
        await _settle(pilot)
        gpus = app.screen.query_one("#gpus")
        assert gpus.display
        await pilot.press("1")
        await _settle(pilot)
        assert not gpus.display
        assert "gpus" in app.hidden_panels
        await pilot.press("1")
        await _settle(pilot)
        assert gpus.display
        await pilot.press("z")
        await _settle(pilot)
        assert app.screen.maximized is not None
        await pilot.press("z")
        await _settle(pilot)
        assert app.screen.maximized is None


async def test_host_switching_keeps_each_state(app_factory: Any) -> None:
    app = app_factory(hosts=["alpha", "beta"])
    async with app.run_test(size=(120, 40)) as pilot:
        await _settle(pilot)
        header = app.screen.query_one(PlateauHeader)
        assert "host alpha (1/2)" in str(header.render())
        app.sessions["beta"].feed(Problem("beta", "gpu", "agent died", "error"))
        await pilot.press("right_square_bracket")
        await _settle(pilot)
        assert app.active_host == "beta"
        assert "host beta (2/2)" in str(header.render())
        assert any(r.message == "agent died" for r in app.sessions["beta"].state.events)
        assert not any(r.message == "agent died" for r in app.sessions["alpha"].state.events)


async def test_background_failure_notifies_and_logs(app_factory: Any) -> None:
    app = app_factory()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await _settle(pilot)
        app.active_session.feed(Problem("demo", "connection", "connection lost: reset", "error"))
        await _settle(pilot)
        assert any("connection lost" in n.message for n in app._notifications)
        assert any(r.message.startswith("connection lost") for r in app.all_events())
        await pilot.press("e")
        await _settle(pilot)
        table = app.screen.query_one("#event-table")
        assert table.row_count == len(app.all_events())


async def test_broken_theme_falls_back_with_message(tmp_path: Path, app_factory: Any) -> None:
    for path in THEME_DIR.glob("*.toml"):
        shutil.copy(path, tmp_path / path.name)
    (tmp_path / "broken.toml").write_text('name = "broken"\nprimary = "#123456"\n')
    (tmp_path / "badcolour.toml").write_text(
        (THEME_DIR / "plateau-dark.toml").read_text().replace(
            'name = "plateau-dark"', 'name = "badcolour"'
        ).replace('gpu-load-high = "#E0605A"', 'gpu-load-high = "not-a-colour"')
    )
    loaded = app_config()
    from console.session.replay import ReplaySession

    session = ReplaySession.from_events(loaded.config.hosts[0], demo_events(), clock=fixed_clock)
    app = PlateauApp(loaded, [session], clock=fixed_clock, theme="broken",
                     theme_dirs=[tmp_path], tick_seconds=None)
    async with app.run_test(size=(120, 40)) as pilot:
        await _settle(pilot)
        assert app.theme == "plateau-dark"
        notes = [r.message for r in app.app_events]
        assert any("missing variable(s)" in n and "broken.toml" in n for n in notes)
        assert any("'not-a-colour' is not a colour" in n for n in notes)
        assert any("theme 'broken' not found or invalid" in n for n in notes)
        assert "badcolour" not in app.plateau_theme_names


async def test_unknown_keymap_id_is_reported(app_factory: Any) -> None:
    app = app_factory(keymap={"restrat": "f5"})
    async with app.run_test(size=(120, 40)) as pilot:
        await _settle(pilot)
        assert any("restrat" in r.message for r in app.app_events)


async def test_help_lists_ids_keys_and_thresholds(app_factory: Any) -> None:
    app = app_factory(keymap={"restart": "f5"}, gpu_load_mid=40.0)
    async with app.run_test(size=(120, 50)) as pilot:
        await _settle(pilot)
        await pilot.press("f1")  # the second key for `?`
        await _settle(pilot)
        from widgets.help_panel import HelpPanel

        text = str(app.screen.query_one(HelpPanel).render())
        assert "f5" in text and "restart" in text
        assert "mid 40-85%" in text


async def test_gpu_bars_use_the_configured_load_levels(app_factory: Any) -> None:
    """`ui.gpu_load_mid` / `ui.gpu_load_high` colour the util, memory and power bars (the
    levels the help panel shows): a 45% util bar is mid at 40, low at the default 50."""
    from widgets.gpu_panel import GpuPanel
    from widgets.gpu_render import level

    app = app_factory(gpu_load_mid=40.0, gpu_load_high=70.0)
    async with app.run_test(size=(120, 40)) as pilot:
        await _settle(pilot)
        panel = app.screen.query_one(GpuPanel)
        assert {k: panel.thresholds[k] for k in ("util", "mem", "power")} == {
            "util": (40.0, 70.0), "mem": (40.0, 70.0), "power": (40.0, 70.0)}
        assert level("util", 45.0, panel.thresholds) == "mid"
    default = app_factory()
    async with default.run_test(size=(120, 40)) as pilot:
        await _settle(pilot)
        panel = default.screen.query_one(GpuPanel)
        assert panel.thresholds["util"] == (50.0, 85.0)
        assert level("util", 45.0, panel.thresholds) == "low"


def test_every_mode_screen_is_a_host_view() -> None:
    """The app hands a host's news to a screen only as a HostView (console.app.contract): a
    mode's screen that is not one would never be drawn."""
    from console.app.screens import dashboard, fleet, tune, views

    screens = [dashboard.DashboardScreen, fleet.FleetScreen, tune.TuneScreen,
               *(getattr(views, name) for name in ("HistoryScreen", "CompareScreen",
                                                   "TopologyScreen", "EventsScreen",
                                                   "ConfigScreen", "WhyScreen"))]
    assert len(screens) == len(SCREENS)
    for screen in screens:
        assert all(hasattr(screen, member) for member in
                   ("render_host", "refresh_header", "shows_every_host")), screen
