"""A request-rate sweep's failed step keeps its rate (issue 29 follow-up): the step that failed
before it measured anything has no metrics to carry the rate, so the step keeps it itself, in
the table `plateau sweep` prints, its JSON, the store, the exports, and the chart."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from rich.style import Style

from console.bench.engines import NativeEngine
from console.bench.knee import knee_of_steps, step_level
from console.bench.models import StepFinished, StepMetrics, StepResult, SweepEvent
from console.bench.report import steps_table
from console.bench.sweep import run_sweep
from console.config_models import SweepPreset
from console.store.db import RunStore
from console.store.export import to_csv, to_json, to_markdown
from tests.support.sim_fixtures import SimProcess
from widgets.sweep_chart import ChartRun, _latency_lines

INF = float("inf")


async def test_a_failed_rate_step_keeps_its_rate(ideal_sim: SimProcess, bench_db: Path) -> None:
    spec = SweepPreset(request_rate=[4.0, INF], max_concurrency=4, input_len=32, output_len=12,
                       num_prompts=4, request_timeout_s=5)

    def on_event(event: SweepEvent) -> None:
        if isinstance(event, StepFinished):
            ideal_sim.process.kill()  # the server dies after the first rate: the next fails
            ideal_sim.process.wait()

    with RunStore(bench_db) as store:
        outcome = await run_sweep(spec, ideal_sim.base_url, engine=NativeEngine(), store=store,
                                  on_event=on_event)
        run = store.get_run(outcome.run_id or 0)
    ok, failed = outcome.steps
    assert (ok.status, failed.status) == ("ok", "failed")
    assert failed.metrics is None  # nothing measured: only the step itself can say its rate
    assert (ok.rate, failed.rate) == (4.0, INF) and failed.concurrency == 4  # cap c4
    assert run.steps == [ok, failed]  # the rate (inf too) survives the database
    # The table `plateau sweep` prints and its --json steps.
    rows = steps_table(run.steps).splitlines()[2:]
    assert rows[0].split()[:2] == ["4/s", "c4"] and rows[1].split()[:2] == ["inf/s", "c4"]
    assert failed.model_dump(mode="json")["request_rate"] == "inf"
    # Export: the CSV's rate column, the Markdown's failed-step line, JSON without Infinity.
    csv_rows = list(csv.DictReader(io.StringIO(to_csv(run))))
    assert [r["request_rate"] for r in csv_rows] == ["4.000", "inf"]
    assert "- request rate inf/s c4: flush_cache failed" in to_markdown(run)
    assert json.loads(to_json(run))["steps"][1]["request_rate"] == "inf"
    # The knee and the chart place it on the rate axis (it used to collapse onto the cap).
    assert knee_of_steps(run.steps).axis == "rate"
    assert [step_level(s) for s in run.steps] == [4.0, INF]
    table = [line.plain for line in _latency_lines(ChartRun("live", run.steps), 60, Style())]
    assert table[1].split()[0] == "rate"
    assert table[2].split()[0] == "4" and table[3].split() == ["inf", "failed"]


def test_a_step_stored_before_it_kept_its_rate_reads_it_from_its_metrics() -> None:
    old = StepResult(index=0, concurrency=0, status="ok",
                     metrics=StepMetrics(concurrency=0, request_rate=2.0))
    assert old.rate == 2.0 and step_level(old) == 2.0
    assert StepResult(index=1, concurrency=8, status="failed").rate is None
