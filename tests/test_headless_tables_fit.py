"""Headless tables fit the terminal (issue 26, item 5): `plateau compare` printed one
275-column table, a run's steps (`plateau sweep`, `history --show`) 170 columns. Now each line
fits $COLUMNS (80 when stdout is not a terminal) and every number is still printed, on its
concurrency's line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from console.bench.compare import compare_runs
from console.bench.report import COMPARE_METRICS, number_cell, step_cells
from console.cli import main
from console.store.db import RunStore
from tests.support.report_fixtures import store_run


def _expected(db: Path) -> dict[str, list[str]]:
    """Per concurrency, every cell the table must show: A, B, delta and delta % per metric."""
    with RunStore(db) as store:
        a, b = store.get_run(1), store.get_run(2)
    comparison = compare_runs(a.steps, b.steps)
    cells: dict[str, list[str]] = {}
    for row in comparison.rows:
        for name in COMPARE_METRICS:
            d = row.get(name)
            assert d.delta is not None and d.pct is not None
            cells.setdefault(str(row.concurrency), []).extend(
                [number_cell(d.a), number_cell(d.b), f"{d.delta:+,.1f}", f"{d.pct:+.1f}%"])
    return cells


@pytest.fixture(params=[80, 120], ids=lambda c: f"{c}cols")
def printed(request: pytest.FixtureRequest, tmp_path: Path, capsys: pytest.CaptureFixture[str],
            monkeypatch: pytest.MonkeyPatch) -> Callable[..., list[str]]:
    """Runs `plateau ARGV` on two stored runs at $COLUMNS 80 and 120; its lines, each checked
    to fit."""
    columns: int = request.param
    with RunStore(tmp_path / "h.db") as store:
        store_run(store, repeats=3)
        store_run(store, repeats=3, scale=1.1, profile="triton-moe", started=1_767_700_000.0)
    monkeypatch.setenv("COLUMNS", str(columns))

    def run(*argv: str) -> list[str]:
        assert main([*argv, "--db", str(tmp_path / "h.db")]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert max(map(len, lines)) <= columns, max(lines, key=len)
        return lines

    return run


def test_compare_fits_the_width_and_keeps_every_number(
    printed: Callable[..., list[str]], tmp_path: Path
) -> None:
    lines = printed("compare", "1", "2")
    for conc, cells in _expected(tmp_path / "h.db").items():
        shown = [w for line in lines if line.split()[:1] == [conc] for w in line.split()]
        missing = [c for c in cells if c not in shown and f"{c}~" not in shown]
        assert missing == [], (conc, missing)
    assert any("--- total tok/s ---" in line for line in lines)
    assert any(line.startswith("~ within run-to-run noise") for line in lines[-2:])


def test_a_runs_steps_fit_the_width_and_keep_every_number(
    printed: Callable[..., list[str]], tmp_path: Path
) -> None:
    lines = printed("history", "--show", "1")
    with RunStore(tmp_path / "h.db") as store:
        steps = store.get_run(1).steps
    for step in steps:
        conc, rep, *cells = step_cells(step)
        shown = " ".join(line for line in lines if line.split()[:2] == [conc, rep])
        assert [c for c in cells if c not in shown] == [], (conc, rep)
