"""Keys answer (issue 17, item 3): a refused key says why, focus is visible, `?` lists every
key, `m`/`v` act on the GPU panel whatever has the focus, the footer fits by priority."""

from __future__ import annotations

import asyncio
from typing import Any

from console.app.bindings import ACTIONS
from console.app.footer import PlateauFooter, key_cells
from console.app.screens.modals import HelpScreen
from widgets.log_view import LogView


async def _settle(pilot: Any) -> None:
    await pilot.pause()
    await pilot.pause(0.05)


async def _until(pilot: Any, ready: Any, what: str, timeout: float = 60.0) -> None:
    """Pause until `ready()`: a loaded machine composes the footer later than an idle one."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not ready():
        assert loop.time() < deadline, f"{what} never happened"
        await pilot.pause(0.05)


def _toasts(app: Any) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def test_refused_keys_say_why(app_factory: Any) -> None:
    app = app_factory(sweep_running=True)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await _settle(pilot)
        for key in ("r", "right_square_bracket", "left_square_bracket", "H"):
            await pilot.press(key)
            await _settle(pilot)
        assert _toasts(app) == [
            "Restart: a sweep is running",
            "Next host: only one host configured",
            "Prev host: only one host configured",
            "Hosts: only one host configured",
        ]


def test_no_binding_on_tmux_prefix() -> None:
    keys = {k.strip() for spec in ACTIONS for k in spec.keys.split(",")}
    keys |= {k.strip() for b in LogView.BINDINGS for k in b.key.split(",")}  # type: ignore[union-attr]
    assert "ctrl+b" not in keys


async def test_help_lists_every_key_and_no_textual_keys(app_factory: Any) -> None:
    app = app_factory()
    async with app.run_test(size=(120, 60)) as pilot:
        await _settle(pilot)
        await pilot.press("question_mark")
        await _settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        text = str(app.screen.query_one("HelpPanel").render())
        for spec in ACTIONS:
            assert spec.id in text
        for key_id in ("gpu-metric", "gpu-rows", "log-severity", "log-own", "log-wrap",
                       "log-left", "log-detail", "log-copy"):
            assert key_id in text
        assert "  m " in text and "  v " in text and "  l " in text and "  o " in text
        assert "textual keys" not in text


async def test_v_and_m_act_on_the_gpu_panel_whatever_has_focus(app_factory: Any) -> None:
    app = app_factory()
    async with app.run_test(size=(160, 48)) as pilot:
        await _settle(pilot)
        gpu = app.screen.gpu_view
        app.screen.query_one("#log-lines").focus()
        await _settle(pilot)
        compact = gpu.compact
        await pilot.press("v")
        await _settle(pilot)
        assert gpu.compact is not compact
        assert app.screen.query_one(LogView).store.filter.min_severity is None  # not the log's
        metric = gpu.history_metric
        await pilot.press("m")
        await _settle(pilot)
        assert gpu.history_metric != metric


async def test_focus_is_visible(app_factory: Any) -> None:
    app = app_factory()
    async with app.run_test(size=(160, 48)) as pilot:
        await _settle(pilot)
        app.screen.query_one("#log-lines").focus()
        await _settle(pilot)
        log, gpus = app.screen.query_one("#log"), app.screen.query_one("#gpus")
        assert log.styles.border_top[0] == "heavy" and gpus.styles.border_top[0] == "round"
        assert "reverse" in str(log.styles.border_title_style)


async def test_footer_fits_by_priority(app_factory: Any) -> None:
    for width in (80, 120):
        app = app_factory()
        async with app.run_test(size=(width, 40)) as pilot:
            await _settle(pilot)
            footer = app.screen.query_one(PlateauFooter)
            await _until(pilot, lambda: footer.shown_keys, "the footer's keys")  # noqa: B023
            await _settle(pilot)
            keys = footer.shown_keys
            used = sum(key_cells(k.key_display, k.description, compact=footer.compact)
                       for k in keys)
            assert used <= width
            shown = [k.key for k in keys]
            assert shown[:2] == ["r", "s"] and "question_mark" in shown and "q" in shown
            assert all(k.end <= width for k in keys)  # nothing cut mid-word
            line = footer.render().plain
            for k in keys:  # each key drawn where the footer says it is
                assert line[k.start:k.end].strip() == f"{k.key_display} {k.description}"


async def test_saving_over_an_existing_profile_asks(app_factory: Any) -> None:
    from console.app.screens.modals import ConfirmScreen
    from widgets.flags_editor import FlagsEditorResult

    app = app_factory()
    async with app.run_test(size=(120, 40)) as pilot:
        await _settle(pilot)
        name = next(iter(app.config.profiles))
        edited = app.config.profiles[name].model_copy(update={"flags": {"tp-size": 4}})
        result = FlagsEditorResult(name, edited, (), action="save")
        for answer, saved in (("n", False), ("y", True)):
            app.run_worker(app._save_edited(result))
            await _settle(pilot)
            assert isinstance(app.screen, ConfirmScreen)
            assert f"A profile called {name} exists" in app.screen.question
            await pilot.press(answer)
            await _settle(pilot)
            assert (app.profiles_dir / f"{name}.toml").exists() is saved
        assert app.config.profiles[name].flags == {"tp-size": 4}
