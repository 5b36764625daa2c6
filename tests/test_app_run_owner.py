"""A run belongs to the host it measured (issue 26, item 1): a `plateau sweep --url` run (stored
with no host) is not a run of the console's host in Why, history or compare, and the headless
history lists it under its URL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.widgets import DataTable

from console.cli import main
from console.store.db import RunStore
from console.store.models import RunMeta
from tests.support.bench_fixtures import fake_step
from widgets.compare_table import CompareTable
from widgets.why_view import WhyView

URL = "http://127.0.0.1:39999"


def _runs(path: Path) -> tuple[int, int, int]:
    """Two finished 4-step runs of demo, then a newer 1-step `--url` run (no host)."""
    ids = []
    with RunStore(path) as store:
        for meta, levels in ((RunMeta(host="demo", profile="triton-moe"), (1, 4, 16, 64)),
                             (RunMeta(host="demo", profile="cutlass-moe"), (1, 4, 16, 64)),
                             (RunMeta(server_url=URL), (4,))):
            run = store.create_run(meta)
            for i, c in enumerate(levels):
                store.add_step(run, fake_step(c, 100.0 * c ** 0.8, index=i))
            store.finish_run(run, "finished")
            ids.append(run)
    return ids[0], ids[1], ids[2]


async def _settle(pilot: Any) -> None:
    for _ in range(4):
        await pilot.pause()
        loaders = [w for w in pilot.app.workers if w.group != "pumps"]
        if loaders:
            await pilot.app.workers.wait_for_complete(loaders)
    await pilot.pause(0.05)


async def test_a_url_run_is_not_a_run_of_the_host(app_factory: Any, tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    first, second, url_run = _runs(db)
    app = app_factory()
    app.store_path = db
    async with app.run_test(size=(140, 45)) as pilot:
        await _settle(pilot)
        await pilot.press("W")
        await _settle(pilot)
        why = app.screen.query_one("#why-view", WhyView).plain
        assert f"run {second} " in why and f"run {url_run} " not in why
        assert "need two or more steps" not in why

        await pilot.press("d", "h")
        await _settle(pilot)
        table = app.screen.query_one("#history-table", DataTable)
        listed = [str(table.get_row_at(i)[1]) for i in range(table.row_count)]
        assert listed == [str(second), str(first)]

        await pilot.press("d", "c")
        await _settle(pilot)
        note = str(app.screen.query_one("#compare-note").render())
        assert f"A = run {first} " in note and f"B = run {second} " in note
        assert app.screen.query_one(CompareTable).row_count == 4


def test_headless_history_lists_a_url_run_under_its_url(
    tmp_path: Path, capsys: Any
) -> None:
    db = tmp_path / "runs.sqlite"
    _runs(db)
    assert main(["history", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert URL in out
