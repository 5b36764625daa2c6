"""Text that carries meaning is not cut (issue 26, item 5): the GPU panel's history column
names its metric in whole words; help lines wrap between words under their column at 80x24
and 120x40 instead of being cut by the box."""

from __future__ import annotations

from typing import Any

import pytest

from console.app.screens.modals import HelpScreen

SIZES = [(80, 24), (120, 40)]


def test_the_history_column_names_its_metric_whole() -> None:
    from widgets.gpu_panel import history_label

    assert history_label("util", 20) == "history: util"
    assert history_label("util", 11) == "hist util"  # was "history: ut"
    assert history_label("memory", 11) == "hist memory"
    assert history_label("memory", 7) == "memory"


async def _open_help(pilot: Any) -> None:
    await pilot.pause()
    await pilot.press("question_mark")
    for _ in range(40):
        await pilot.pause(0.05)
        if isinstance(pilot.app.screen, HelpScreen):
            break
    await pilot.pause(0.1)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_help_lines_fit_the_box(app_factory: Any, size: tuple[int, int]) -> None:
    app = app_factory()
    async with app.run_test(size=size) as pilot:
        await _open_help(pilot)
        panel = app.screen.query_one("HelpPanel")
        room = app.screen.query_one("#help-box").scrollable_content_region.width
        lines = str(panel.render()).splitlines()
        too_long = [line for line in lines if len(line.rstrip()) + 2 > room]  # padding 0 1
        assert too_long == []
        words = " ".join("\n".join(lines).split())  # the wrapped lines read as one sentence
        assert "a key per fix to A/B (w is the log's wrap)" in words


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_help_snapshot(snap_compare: Any, app_factory: Any, size: tuple[int, int]) -> None:
    assert snap_compare(app_factory(), terminal_size=size, run_before=_open_help)
