"""The flags editor modal: discovered choices, numeric validation, diff, save as new profile."""

from __future__ import annotations

import os
from typing import Any

import pytest
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.widgets import Button, Input, Select, Static

from console.config_models import ServerProfile
from console.server.flags import FlagSchema, parse_help
from console.server.known import TYPE_HINTS
from console.server.profile_edit import editable_flags, flags_from_argv
from tests.support.snapshot import SnapCompare
from widgets.flags_editor import FlagsEditor, FlagsEditorResult


def _schema() -> FlagSchema:
    from console.sim.args import build_sglang_parser

    os.environ.setdefault("COLUMNS", "100")
    return parse_help(build_sglang_parser().format_help(), version="0.5.23").with_hints(TYPE_HINTS)


SCHEMA = _schema()
BASE = ServerProfile(
    launch=["python", "-m", "sglang.launch_server"],
    model_path="org/Example-MoE",
    flags={"tp-size": 8, "moe-runner-backend": "cutlass", "mem-fraction-static": 0.85},
    extra_args=["--enable-metrics"],
)
RUNNING = flags_from_argv(
    ["python", "-m", "sglang.launch_server", "--model-path", "org/Example-MoE", "--port",
     "30000", "--tp-size", "8", "--moe-runner-backend", "cutlass",
     "--mem-fraction-static", "0.85", "--enable-metrics"],
    SCHEMA,
)


class EditorApp(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.result: FlagsEditorResult | str | None = "pending"

    def compose(self) -> ComposeResult:
        yield Static("host: demo")

    def on_mount(self) -> None:
        def done(result: FlagsEditorResult | None) -> None:
            self.result = result

        self.push_screen(
            FlagsEditor("cutlass-moe", BASE, SCHEMA, RUNNING,
                        existing_names=frozenset({"cutlass-moe", "triton-moe"})),
            done,
        )


def test_fields_come_from_the_discovered_schema() -> None:
    fields = {f.name: f for f in editable_flags(SCHEMA)}
    moe = SCHEMA.get("moe-runner-backend")
    assert moe is not None
    assert fields["moe-runner-backend"].choices == moe.choices
    assert "dsa-decode-backend" in fields and "nsa-decode-backend" not in fields
    assert fields["tp-size"].kind == "number" and fields["tp-size"].value_type == "int"
    small = parse_help("options:\n  --moe-runner-backend {auto,triton}\n  --tp-size TP_SIZE\n")
    assert [f.name for f in editable_flags(small)] == ["moe-runner-backend", "tp-size"]


def test_editor_snapshot(snap_compare: SnapCompare) -> None:
    async def change(pilot: Pilot[Any]) -> None:
        pilot.app.screen.query_one("#flag-moe-runner-backend", Select).value = "triton"
        await pilot.pause()

    assert snap_compare(EditorApp(), run_before=change, terminal_size=(110, 40))


async def test_edit_validate_and_save() -> None:
    app = EditorApp()
    async with app.run_test(size=(110, 40)) as pilot:
        editor = app.screen
        assert isinstance(editor, FlagsEditor)
        diff = editor.query_one("#diff", Static)
        assert "no changes" in str(diff.render())
        editor.query_one("#flag-moe-runner-backend", Select).value = "triton"
        await pilot.pause()
        assert "cutlass → triton" in str(diff.render())
        save = editor.query_one("#save", Button)
        assert not save.disabled
        # a non-number blocks saving
        tp = editor.query_one("#flag-tp-size", Input)
        tp.value = "eight"
        await pilot.pause()
        assert save.disabled
        assert "not a number" in str(editor.query_one("#messages", Static).render())
        tp.value = "4"
        # an old flag in the free-form args: rejected with the rename
        extra = editor.query_one("#extra-args", Input)
        extra.value = "--enable-metrics --nsa-decode-backend fa3"
        await pilot.pause()
        assert save.disabled
        assert "--dsa-decode-backend" in str(editor.query_one("#messages", Static).render())
        extra.value = "--enable-metrics --dsa-decode-backend 'fa3'"
        # an existing name may be saved over, and the editor says so (the app asks first)
        name = editor.query_one("#profile-name", Input)
        name.value = "triton-moe"
        await pilot.pause()
        assert not save.disabled
        assert "replaces the profile 'triton-moe'" in str(
            editor.query_one("#messages", Static).render())
        name.value = "triton-tp4"
        await pilot.pause()
        assert not save.disabled
        await pilot.click("#save")
        await pilot.pause()
    result = app.result
    assert isinstance(result, FlagsEditorResult)
    assert result.name == "triton-tp4"
    assert result.profile.flags["moe-runner-backend"] == "triton"
    assert result.profile.flags["tp-size"] == 4
    assert result.profile.extra_args == ["--enable-metrics", "--dsa-decode-backend", "fa3"]
    changed = {c.flag: (c.before, c.after) for c in result.changes}
    assert changed == {
        "moe-runner-backend": ("cutlass", "triton"),
        "tp-size": ("8", "4"),
        "dsa-decode-backend": (None, "fa3"),
    }
    assert BASE.flags["moe-runner-backend"] == "cutlass"  # the base profile is untouched


async def test_one_flag_and_restart_in_few_keys() -> None:
    """The first field has the focus; a letter picks the next choice starting with it; ctrl+r
    is "Restart with these flags" (the app then asks once): f, t, ctrl+r, y in the console."""
    app = EditorApp()
    async with app.run_test(size=(110, 40)) as pilot:
        await pilot.pause()
        select = app.screen.query_one("#flag-moe-runner-backend", Select)
        assert app.focused is select
        await pilot.press("t")  # cutlass -> triton (the next choice starting with t)
        assert select.value == "triton"
        await pilot.press("right", "left")  # step through the choices without opening them
        assert select.value == "triton"
        await pilot.press("down")  # the next field, not the list
        assert app.focused is app.screen.query_one("#flag-attention-backend", Select)
        await pilot.press("ctrl+r")
        await pilot.pause()
    result = app.result
    assert isinstance(result, FlagsEditorResult) and result.action == "restart"
    assert result.profile.flags["moe-runner-backend"] == "triton"


async def test_escape_cancels() -> None:
    app = EditorApp()
    async with app.run_test(size=(110, 40)) as pilot:
        await pilot.press("escape")
        await pilot.pause()
    assert app.result is None


@pytest.mark.parametrize("text", ["--a 'unterminated", "--x\n--y"])
def test_extra_args_parse_errors(text: str) -> None:
    from console.server.profile_edit import ExtraArgsError, parse_extra_args

    with pytest.raises(ExtraArgsError):
        parse_extra_args(text)
