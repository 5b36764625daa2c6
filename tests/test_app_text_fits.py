"""Text that carries meaning is not cut (issue 26, item 5): the GPU panel's history column
names its metric in whole words; help lines wrap between words under their column at 80x24
and 120x40 instead of being cut by the box; the run's steps, the compare table, the config
and the event log keep every column in view (split into parts, or wrapped)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable

from console.app.screens.modals import HelpScreen
from console.store.db import RunStore
from console.store.models import RunMeta
from tests.support.bench_fixtures import fake_step

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


# -- tables: every column in view, nothing cut at the edge -----------------------------------

LONG_EVENT = ("restart cutlass-moe → triton-moe done: validate 0.1 s, stop 2.3 s, launch 0.4 s, "
              "startup 41.7 s (load weights 30.2 s, KV cache 3.1 s, CUDA graphs 7.9 s), ready")


def test_split_columns_keeps_the_keys_and_whole_groups() -> None:
    from widgets.split_table import split_columns

    widths = [4, 3, 10, 10, 10, 10, 10]  # + 2 padding each
    assert split_columns(widths, 2, [1, 1, 1, 1, 1], 200) == [[0, 1, 2, 3, 4, 5, 6]]
    assert split_columns(widths, 2, [1, 1, 1, 1, 1], 45) == [[0, 1, 2, 3], [0, 1, 4, 5],
                                                              [0, 1, 6]]
    assert split_columns(widths, 1, [3, 3], 45) == [[0, 1, 2, 3], [0, 4, 5, 6]]
    assert split_columns(widths, 1, [6], 20) == [[0, 1, 2, 3, 4, 5, 6]]  # one group: scrolls


def test_fit_widths_narrows_the_widest_text_columns_first() -> None:
    from widgets.table_fill import fit_widths

    assert fit_widths([10, 50, 30], (1, 2), 200) == [10, 50, 30]
    assert fit_widths([10, 50, 30], (1, 2), 76) == [10, 30, 30]  # 6 padding: 70 of text
    assert fit_widths([10, 50, 30], (1, 2), 46) == [10, 15, 15]
    assert fit_widths([10, 50, 30], (1,), 20) == [10, 8, 30]  # floor, then it scrolls


async def _open_run(pilot: Any) -> None:
    from tests.test_app_history import _wait_rows

    await _wait_rows(pilot, pilot.app, "#history-table")
    await pilot.press("enter")
    await _wait_rows(pilot, pilot.app, "#run-steps")
    await pilot.pause(0.2)


async def _settled(pilot: Any) -> None:
    await pilot.pause()
    loaders = [w for w in pilot.app.workers if w.group != "pumps"]
    if loaders:
        await pilot.app.workers.wait_for_complete(loaders)
    await pilot.pause(0.2)
    await pilot.pause()


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The run's start time is shown in local time: the same on every machine."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def _table_app(app_factory: Any, tmp_path: Path, view: str) -> Any:
    if view == "run":  # a stored run of two levels, two repeats each, at a fixed time
        with RunStore(tmp_path / "runs.sqlite") as store:
            run = store.create_run(RunMeta(host="demo", profile="cutlass-moe"),
                                   started_at=1_767_600_000.0)
            for i, c in enumerate((4, 16)):
                for r in range(2):
                    store.add_step(run, fake_step(c, 100.0 * c * (1 + r / 100),
                                                  index=2 * i + r, repeat=r))
            store.finish_run(run, "finished")
        app = app_factory(screen="history")
        app.store_path = tmp_path / "runs.sqlite"
        return app
    app = app_factory(screen=view, with_ab=view == "compare")
    app.app_note("sweep", LONG_EVENT)
    return app


def _cut(table: DataTable[Any]) -> int:
    """How many columns of text lie beyond the table's visible width (0: nothing cut)."""
    return max(0, table.virtual_size.width - table.scrollable_content_region.width)


VIEWS = ["run", "compare", "config", "events"]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("view", VIEWS)
async def test_tables_fit_their_width(app_factory: Any, tmp_path: Path, view: str,
                                      size: tuple[int, int], utc: None) -> None:
    """Was: the run's step table and the compare table cut at the box's edge, the config's
    source column "sourc", event messages cut; each now fits, split or wrapped."""
    app = _table_app(app_factory, tmp_path, view)
    async with app.run_test(size=size) as pilot:
        await (_open_run(pilot) if view == "run" else _settled(pilot))
        tables = list(app.screen.query(DataTable))
        assert tables and [_cut(t) for t in tables] == [0] * len(tables)
        shown = [str(c.label) for t in tables for c in t.ordered_columns]
        if view == "run":  # every column of the step table, in some part
            from console.bench.report import STEP_HEADERS

            assert set(shown) == set(STEP_HEADERS)
        if view == "compare":
            assert {"A ITL p50 ms", "\u0394 ITL p50 ms", "\u0394 total tok/s"} <= set(shown)
        if view == "events":
            table = tables[0]
            messages = [str(table.get_row_at(i)[-1]) for i in range(table.row_count)]
            assert LONG_EVENT in messages  # whole, on as many lines as it takes
            later = LONG_EVENT.replace("restart", "a later restart") + " " + "x" * 130
            app.app_note("server", later)  # a new one, wrapped too
            app.screen.render_body(app.active_state, ("events",))
            await pilot.pause(0.1)
            messages = [str(table.get_row_at(i)[-1]) for i in range(table.row_count)]
            assert _cut(table) == 0 and later in messages


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("view", VIEWS)
def test_table_snapshots(snap_compare: Any, app_factory: Any, tmp_path: Path, view: str,
                         size: tuple[int, int], utc: None) -> None:
    app = _table_app(app_factory, tmp_path, view)
    assert snap_compare(app, terminal_size=size,
                        run_before=_open_run if view == "run" else _settled)
