"""Non-finite numbers in stored steps (real SQLite, the real CLI): a step whose throughput is
NaN or infinite is stored so it reads back (pydantic's JSON writer made it null, which its
reader refused: every command that opened the run died with a 30-line ValidationError), and
`report` (Markdown and HTML), `history --show`, `export` and `compare` then work; a row
already stored that way (by an older build, or edited) is one line naming run and step."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import pytest

from console.bench.models import StepResult
from console.store.db import RunStore
from tests.support.report_fixtures import _metrics, store_run
from tests.test_config import plateau

COMMANDS = [["report", "1", "--md"], ["report", "1", "--html", "{tmp}/r.html"],
            ["history", "--show", "1"], ["history", "--show", "1", "--json"],
            ["export", "1"], ["export", "1", "--format", "csv"], ["compare", "1", "1"]]


def _run_with_non_finite_steps(db: Path) -> None:
    with RunStore(db) as store:
        run = store_run(store)
        for i, value in enumerate((math.nan, math.inf, -math.inf)):
            metrics = _metrics(256, 900.0).model_copy(
                update={"total_tok_s": value, "output_tok_s": value})
            store.add_step(run, StepResult(index=100 + i, concurrency=256 + i, status="ok",
                                           metrics=metrics, started_at=1.0, finished_at=2.0))


def test_non_finite_steps_read_back(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    _run_with_non_finite_steps(db)
    with RunStore(db) as store:
        steps = store.get_run(1).steps[-3:]
    totals = [s.metrics.total_tok_s for s in steps if s.metrics is not None]
    assert math.isnan(totals[0]) and totals[1:] == [math.inf, -math.inf]


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_every_reader_of_a_run_with_non_finite_steps_works(
    tmp_path: Path, argv: list[str]
) -> None:
    db = tmp_path / "runs.db"
    _run_with_non_finite_steps(db)
    done = plateau(*(a.format(tmp=tmp_path) for a in argv), "--db", str(db))
    assert done.returncode == 0 and done.stderr == "", done.stderr[-3000:]


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_a_row_that_does_not_read_back_is_one_line(tmp_path: Path, argv: list[str]) -> None:
    db = tmp_path / "runs.db"
    _run_with_non_finite_steps(db)
    with sqlite3.connect(db) as raw:  # as an older build wrote a non-finite number: null
        raw.execute("UPDATE steps SET metrics = replace(metrics, 'NaN', 'null') "
                    "WHERE idx = 100")
    done = plateau(*(a.format(tmp=tmp_path) for a in argv), "--db", str(db))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr == ("plateau: run 1 step 100: its stored record does not read back "
                           "(output_tok_s: Input should be a valid number)\n"), done.stderr
