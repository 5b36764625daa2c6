"""The flags editor saves what the operator chose (issue 26, item 10): flags that are another
profile name that profile (a restart into triton's flags is "triton-moe", not "cutlass-moe-2");
a changed profile's description says what changed; the demo's temporary state file and free
port are not written to profiles.d."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from textual.widgets import Input

from console.app.app import PlateauApp
from console.app.screens.modals import ConfirmScreen
from tests.support.app_fixtures import app_config, demo_events, fixed_clock
from tests.test_app_why import SchemaReplay
from widgets.flags_editor import FlagsEditor, FlagSelect


def _app(tmp_path: Path) -> PlateauApp:
    loaded = app_config()
    host = loaded.config.hosts[0]
    host = host.model_copy(update={"sim_state_file": "/tmp/plateau-demo-x/gpu-state.json"})
    profiles = {
        name: p.model_copy(update={"port": 41234, "flags": {
            **p.flags, "sim-state-file": "/tmp/plateau-demo-x/gpu-state.json"}})
        for name, p in loaded.config.profiles.items()
    }
    config = loaded.config.model_copy(update={"profiles": profiles, "hosts": [host]})
    from console.config import LoadedConfig

    loaded = LoadedConfig(config, None)
    session = SchemaReplay.from_events(host, demo_events(host.name), clock=fixed_clock)
    app = PlateauApp(loaded, [session], clock=fixed_clock, tick_seconds=None)
    app.profiles_dir = tmp_path / "profiles.d"
    return app


async def _editor(pilot: Any) -> FlagsEditor:
    await pilot.pause()
    await pilot.press("f")
    for _ in range(100):
        await pilot.pause(0.05)
        if isinstance(pilot.app.screen, FlagsEditor):
            break
    await pilot.pause()
    editor = pilot.app.screen
    assert isinstance(editor, FlagsEditor)
    return editor


async def test_flags_that_are_another_profile_are_named_after_it(tmp_path: Path) -> None:
    app = _app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        editor = await _editor(pilot)
        name = editor.query_one("#profile-name", Input)
        assert name.value == "cutlass-moe-2"
        await pilot.press("t")  # the focused --moe-runner-backend: the next choice with t
        await pilot.pause()
        assert editor.query_one("#flag-moe-runner-backend", FlagSelect).value == "triton"
        assert name.value == "triton-moe"
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await pilot.pause(0.1)
    session = app.active_session
    assert isinstance(session, SchemaReplay)
    assert session.commands == [("restart", "triton-moe")]
    assert "triton-moe-2" not in app.config.profiles and "cutlass-moe-2" not in app.config.profiles


async def test_a_saved_change_says_what_changed_and_keeps_no_demo_run_state(
    tmp_path: Path
) -> None:
    app = _app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        editor = await _editor(pilot)
        await pilot.press("t")
        await pilot.pause()
        name = editor.query_one("#profile-name", Input)
        name.value = "my-triton"
        await pilot.pause()
        await pilot.press("ctrl+s")
        for _ in range(40):
            await pilot.pause(0.05)
            if (tmp_path / "profiles.d" / "my-triton.toml").exists():
                break
    saved = tomllib.loads((tmp_path / "profiles.d" / "my-triton.toml").read_text())
    profile = saved["profiles"]["my-triton"]
    assert profile["flags"]["moe-runner-backend"] == "triton"
    assert "sim-state-file" not in profile["flags"]
    assert profile["port"] == 30000
    assert "CUTLASS" not in profile.get("description", "")
    assert profile["description"] == "cutlass-moe with --moe-runner-backend triton"
    # This run keeps its own copy: the demo still finds its state file and port.
    kept = app.config.profiles["my-triton"]
    assert kept.port == 41234 and "sim-state-file" in kept.flags
