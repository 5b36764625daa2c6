"""History you can use: incomplete runs marked and never compared by default, rows open the
run, two marked runs are compared; the A/B dialog's settings and estimate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.widgets import Checkbox, DataTable, Input

from console.app.screens.modals import ABPicker
from console.app.screens.run import RunScreen
from console.app.screens.views import CompareScreen, HistoryScreen
from console.jobs.ab import ABRequest
from console.store.db import RunStore
from console.store.models import RunMeta
from tests.support.bench_fixtures import fake_step


def _history(path: Path) -> None:
    """Runs 1 and 2 finished (triton, then cutlass), run 3 cancelled after one step."""
    with RunStore(path) as store:
        for profile, scale, status in (("triton-moe", 1.0, "finished"),
                                       ("cutlass-moe", 1.1, "finished"),
                                       ("cutlass-moe", 0.5, "cancelled")):
            run = store.create_run(RunMeta(host="demo", profile=profile,
                                           flags={"moe-runner-backend": profile[:-4]}))
            levels = (4, 16) if status == "finished" else (4,)
            for i, c in enumerate(levels):
                for r in range(2):
                    store.add_step(run, fake_step(c, 100.0 * c * scale * (1 + r / 100),
                                                  index=2 * i + r, repeat=r))
            store.finish_run(run, status)  # type: ignore[arg-type]


def _app(app_factory: Any, tmp_path: Path) -> Any:
    path = tmp_path / "runs.sqlite"
    _history(path)
    app = app_factory(screen="history")
    app.store_path = path
    return app


def _cells(app: Any, table_id: str) -> list[list[str]]:
    table = app.screen.query_one(table_id, DataTable)
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


async def _wait_rows(pilot: Any, app: Any, table_id: str) -> None:
    for _ in range(100):
        await pilot.pause(0.05)
        if app.screen.query(table_id) and app.screen.query_one(table_id, DataTable).row_count:
            return
    raise AssertionError(f"{table_id} stayed empty")


async def test_incomplete_runs_are_marked_and_not_compared_by_default(
    app_factory: Any, tmp_path: Path
) -> None:
    app = _app(app_factory, tmp_path)
    async with app.run_test(size=(140, 40)) as pilot:
        await _wait_rows(pilot, app, "#history-table")
        rows = _cells(app, "#history-table")
        assert [r[1] for r in rows] == ["3", "2", "1"]
        assert rows[0][3] == "cancelled \u2717" and rows[1][3] == "finished"
        await pilot.press("c")
        await _wait_rows(pilot, app, "#compare-table")
        note = str(app.screen.query_one("#compare-note").render())
        assert "A = run 1" in note and "B = run 2" in note  # the cancelled run 3 is skipped
        assert "verdict: B +10.0%" in note and ": real" in note
        assert "moe-runner-backend triton \u2192 cutlass" in note
        verdicts = [r[1] for r in _cells(app, "#compare-table")]
        assert all("better" in v for v in verdicts), verdicts


async def test_rows_open_the_run_and_two_marked_runs_are_compared(
    app_factory: Any, tmp_path: Path
) -> None:
    app = _app(app_factory, tmp_path)
    async with app.run_test(size=(140, 40)) as pilot:
        await _wait_rows(pilot, app, "#history-table")
        await pilot.press("enter")  # run 3, the newest
        for _ in range(100):
            await pilot.pause(0.05)
            if isinstance(app.screen, RunScreen):
                break
        assert isinstance(app.screen, RunScreen) and app.screen.run.id == 3
        assert app.screen.query_one("#run-steps", DataTable).row_count == 2
        assert "--moe-runner-backend cutlass" in str(app.screen.query_one("#run-flags").render())
        assert str(app.screen.query_one("#run-diagnosis").render())  # the client-only diagnosis
        await pilot.press("escape")
        assert isinstance(app.screen, HistoryScreen)
        await pilot.press("m")  # mark run 3 (cancelled: only compared when asked for)
        await pilot.press("down", "down", "m")  # and run 1
        await pilot.pause(0.2)
        assert app.marked_runs == [3, 1]
        await _wait_rows(pilot, app, "#history-table")
        assert [r[0] for r in _cells(app, "#history-table")] == ["\u25cf", "", "\u25cf"]
        await pilot.press("c")
        await _wait_rows(pilot, app, "#compare-table")
        assert isinstance(app.screen, CompareScreen)
        note = str(app.screen.query_one("#compare-note").render())
        assert "A = run 1" in note and "B = run 3" in note


async def test_ab_dialog_sets_repeats_levels_interleave_and_estimates(app_factory: Any) -> None:
    app = app_factory()
    chosen: list[ABRequest | None] = []
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.pause()
        app.push_screen(ABPicker(["triton-moe", "cutlass-moe"], {"default": app.config.sweep(
            "default")}, "triton-moe", "cutlass-moe", restart_s=lambda _n: 10.0), chosen.append)
        await pilot.pause()
        picker = app.screen
        estimate = str(picker.query_one("#ab-estimate").render())
        assert "6 restarts" in estimate and "rough guess" in estimate  # 3 repeats, interleaved
        picker.query_one("#ab-concurrency", Input).value = "16, 4, x"
        await pilot.pause()
        assert "concurrencies" in str(picker.query_one("#ab-message").render())
        picker.query_one("#ab-concurrency", Input).value = "16,4"
        picker.query_one("#ab-repeats", Input).value = "5"
        picker.query_one("#ab-interleave", Checkbox).value = False
        await pilot.pause()
        assert "2 restarts, 20 steps" in str(picker.query_one("#ab-estimate").render())
        await pilot.press("ctrl+s")
        await pilot.pause()
    assert chosen == [ABRequest("triton-moe", "cutlass-moe", "default", 5, False, (4, 16))]


def test_ab_dialog_snapshot(snap_compare: Any, app_factory: Any) -> None:
    async def open_dialog(pilot: Any) -> None:
        await pilot.pause()
        await pilot.press("a")
        await pilot.pause()

    assert snap_compare(app_factory(), terminal_size=(120, 44), run_before=open_dialog)
