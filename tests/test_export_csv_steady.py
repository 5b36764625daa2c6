"""`plateau export --format csv` carries each step's steady-state throughput: the figure every
other view judges a step by (StepMetrics.headline_total_tok_s), and whether the step reached a
steady state at all. A step measured without the check (bench_serving, or stored before it
existed) leaves the three cells empty."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from console.bench.models import SteadyState
from console.cli import main
from console.store.db import RunStore
from tests.support.report_fixtures import store_run

STEADY = (
    SteadyState(ratio=0.8, threshold=7, reached=True, total_tok_s=140.5, output_tok_s=35.25),
    SteadyState(ratio=0.8, threshold=13, reached=False),
    None,
)


def _run_with_steady_states(db: Path) -> int:
    with RunStore(db) as store:
        run = store_run(store)
        steps = store.get_run(run).steps
        copy = store.create_run(store.get_run(run).summary.meta)
        for step, steady in zip(steps, STEADY, strict=False):
            assert step.metrics is not None
            metrics = step.metrics.model_copy(update={"steady": steady})
            store.add_step(copy, step.model_copy(update={"metrics": metrics}))
        store.finish_run(copy, "finished")
    return copy


def test_csv_has_steady_throughput_and_whether_it_was_reached(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "runs.db"
    run = _run_with_steady_states(db)
    capsys.readouterr()
    assert main(["export", str(run), "--format", "csv", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    rows = list(csv.DictReader(io.StringIO(out)))
    cells = [(r["steady_total_tok_s"], r["steady_output_tok_s"], r["steady_reached"])
             for r in rows]
    assert cells == [("140.500", "35.250", "yes"), ("", "", "no"), ("", "", "")]
    # The whole-step figures stay as they were, beside the steady ones.
    assert [r["total_tok_s"] for r in rows] == ["130.000", "240.000", "438.000"]
    # The new columns come last: every column before keeps its place.
    header = next(csv.reader(io.StringIO(out)))
    assert header[-4:] == ["request_rate", "steady_total_tok_s", "steady_output_tok_s",
                           "steady_reached"]

