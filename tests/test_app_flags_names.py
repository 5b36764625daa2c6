"""The flags editor's profile name (issue 41, item 7): it suggests only names the save accepts
(after a Why A/B the running profile is "cutlass-moe+cuda-graph-ceiling", and "+" is no file
name); a name the save refuses, or a save that fails, keeps the editor and its edit and says
why; ctrl+n reaches the name (it sits below some 25 fields); a restart kept for this run under
a saved profile's name reads "(edited)" in the header, not the old name alone."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from textual.widgets import Input, Static

from console.app.contract import HostView
from console.app.screens.modals import ConfirmScreen
from console.session.profiles import ProfileSaveError, check_name
from tests.test_app_flags_save import _app, _editor
from widgets.flags_editor import FlagsEditor, FlagSelect
from widgets.header import PlateauHeader

WHY_AB = "cutlass-moe+cuda-graph-ceiling"


def _saveable(name: str) -> bool:
    try:
        check_name(name)
    except ProfileSaveError:
        return False
    return True


async def _triton_named(pilot: Any, name: str) -> FlagsEditor:
    """The editor open, --moe-runner-backend switched to triton, `name` typed (ctrl+n)."""
    editor = await _editor(pilot)
    await pilot.press("t", "ctrl+n")
    await pilot.pause()
    field = editor.query_one("#profile-name", Input)
    assert pilot.app.focused is field  # one key, not 26 Tabs
    field.value = name
    await pilot.pause()
    return editor


def _messages(editor: FlagsEditor) -> str:
    return str(editor.query_one("#messages", Static).render())


async def test_after_a_why_ab_the_suggested_name_is_one_the_save_accepts(
    tmp_path: Path
) -> None:
    app = _app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        base = app.config.profiles["cutlass-moe"]
        why = base.model_copy(update={"flags": {**base.flags, "cuda-graph-max-bs": 160}})
        app.add_profile(WHY_AB, why, persist=False)  # as the Why view's A/B does
        app.active_session.state.profile = WHY_AB  # ...and then runs it
        editor = await _editor(pilot)
        suggested = editor.query_one("#profile-name", Input).value
        assert _saveable(suggested), suggested
        assert suggested == "cutlass-moe-cuda-graph-ceiling-2"
        await pilot.press("ctrl+s")
        for _ in range(40):
            await pilot.pause(0.05)
            if (tmp_path / "profiles.d" / f"{suggested}.toml").exists():
                break
    assert (tmp_path / "profiles.d" / f"{suggested}.toml").exists()


async def test_a_name_the_save_refuses_keeps_the_editor_and_the_edit(tmp_path: Path) -> None:
    app = _app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        editor = await _triton_named(pilot, "mine+triton")
        name = editor.query_one("#profile-name", Input)
        assert "use letters, digits" in _messages(editor)
        await pilot.press("ctrl+s")
        await pilot.pause(0.2)
        assert app.screen is editor
        assert editor.query_one("#flag-moe-runner-backend", FlagSelect).value == "triton"
        assert name.value == "mine+triton"
    assert not (tmp_path / "profiles.d").exists()


async def test_a_save_that_fails_reopens_the_edit_with_the_reason(tmp_path: Path) -> None:
    app = _app(tmp_path)
    (tmp_path / "profiles.d").write_text("a file where the directory should be")
    async with app.run_test(size=(120, 40)) as pilot:
        editor = await _triton_named(pilot, "my-triton")
        await pilot.press("ctrl+s")
        for _ in range(40):
            await pilot.pause(0.05)
            if isinstance(app.screen, FlagsEditor) and app.screen is not editor:
                break
        again = app.screen
        assert isinstance(again, FlagsEditor) and again is not editor
        assert again.query_one("#flag-moe-runner-backend", FlagSelect).value == "triton"
        assert again.query_one("#profile-name", Input).value == "my-triton"
        assert "not saved: cannot write" in _messages(again)
        (tmp_path / "profiles.d").unlink()  # the directory can be made now
        await pilot.press("ctrl+s")
        for _ in range(40):
            await pilot.pause(0.05)
            if (tmp_path / "profiles.d" / "my-triton.toml").exists():
                break
    saved = app.config.profiles["my-triton"]
    assert saved.flags["moe-runner-backend"] == "triton"
    assert saved.description == "cutlass-moe with --moe-runner-backend triton"


async def test_a_restart_under_the_old_name_with_other_flags_reads_edited(
    tmp_path: Path
) -> None:
    app = _app(tmp_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await _triton_named(pilot, "cutlass-moe")
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await pilot.pause(0.1)
        app.active_session.state.profile = "cutlass-moe"
        screen = app.screen
        assert isinstance(screen, HostView)
        screen.refresh_header(app.active_session.state)
        await pilot.pause()
        header = str(screen.query_one(PlateauHeader).render())
        assert 'profile "cutlass-moe" (edited)' in header, header
        assert app.config.profiles["cutlass-moe"].flags["moe-runner-backend"] == "triton"


def test_every_stem_makes_saveable_names() -> None:
    from console.session.profiles import name_stem

    for name in (WHY_AB, "+x", "a b/c", "é" * 80, "-lead", "x" * 100):
        assert _saveable(f"{name_stem(name)}-99"), name
    assert os.sep not in name_stem("../../etc")


async def _until_screen(pilot: Any, kind: type) -> Any:
    for _ in range(40):
        if isinstance(pilot.app.screen, kind):
            break
        await pilot.pause(0.05)
    assert isinstance(pilot.app.screen, kind), pilot.app.screen
    return pilot.app.screen


async def test_keeping_the_existing_profile_brings_the_edit_back(tmp_path: Path) -> None:
    # "Replace it?" answered no: the edit is not lost, it comes back to be named otherwise
    app = _app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await _triton_named(pilot, "triton-moe")  # the demo's other profile
        await pilot.press("ctrl+s")
        await _until_screen(pilot, ConfirmScreen)
        await pilot.press("n")
        again = await _until_screen(pilot, FlagsEditor)
        assert again.query_one("#flag-moe-runner-backend", FlagSelect).value == "triton"
        assert again.query_one("#profile-name", Input).value == "triton-moe"
        assert "triton-moe exists and was kept; choose another name" in _messages(again)
    assert not (tmp_path / "profiles.d" / "triton-moe.toml").exists()
