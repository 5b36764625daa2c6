"""`plateau export` round trips on stored runs (real SQLite): CSV and JSON re-read, OpenMetrics
parsed by prometheus_client's OpenMetrics parser, llm-d Benchmark Reports validated by the
published `llmd-benchmark-report` package (its pydantic models and its JSON Schema file)."""

from __future__ import annotations

import copy
import csv
import io
import json
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import llmd_benchmark_report
import pytest
from llmd_benchmark_report.schema_v0_2 import BenchmarkReportV02
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from console.cli import main
from console.store.db import RunStore
from tests.support.report_fixtures import HOSTILE_PROFILE, REFERENCE, ab_pair, reference_run


def _export(capsys: pytest.CaptureFixture[str], db: Path, run: int, fmt: str) -> str:
    capsys.readouterr()
    assert main(["export", str(run), "--format", fmt, "--db", str(db)]) == 0
    return capsys.readouterr().out


def _schema() -> dict[str, Any]:
    text = resources.files(llmd_benchmark_report).joinpath("br_v0_2_json_schema.json")
    schema: dict[str, Any] = json.loads(text.read_text(encoding="utf-8"))
    return schema


def test_csv_and_json_re_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "runs.db"
    run = reference_run(db)
    rows = list(csv.DictReader(io.StringIO(_export(capsys, db, run, "csv"))))
    assert [int(r["concurrency"]) for r in rows] == [c for c, _ in REFERENCE]
    assert [float(r["total_tok_s"]) for r in rows] == [t for _, t in REFERENCE]
    data = json.loads(_export(capsys, db, run, "json"))
    with RunStore(db) as store:
        stored = store.get_run(run)
    assert data["steps"] == stored.model_dump(mode="json")["steps"]
    assert data["summary"]["meta"]["profile"] == "cutlass-moe"


def test_openmetrics_parses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "runs.db"
    run = reference_run(db, hostile=True)
    text = _export(capsys, db, run, "openmetrics")
    assert text.endswith("# EOF\n")
    families = {f.name: f for f in text_string_to_metric_families(text)}
    total = families["plateau_step_total_tokens_per_second"]
    assert total.type == "gauge"
    assert [(s.labels["concurrency"], s.value) for s in total.samples] == [
        (str(c), t) for c, t in REFERENCE]  # the failed step has no sample
    assert {s.labels["profile"] for s in total.samples} == {HOSTILE_PROFILE}
    ttft = families["plateau_step_ttft_seconds"]
    assert ttft.unit == "seconds"
    p99 = [s for s in ttft.samples if s.labels["percentile"] == "99"]
    assert len(p99) == len(REFERENCE) and p99[0].value == pytest.approx(2 * (20 + 8 * 0.8) / 1000)
    knee = families["plateau_run_knee_concurrency"].samples
    assert [(s.labels["kind"], s.value) for s in knee] == [("saturates", 64.0)]


def test_benchmark_reports_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "runs.db"
    a, _b = ab_pair(db)
    lines = _export(capsys, db, a, "benchmark-report").splitlines()
    assert len(lines) == 3 * len(REFERENCE)  # one report per step
    schema = _schema()
    reports = [json.loads(line) for line in lines]
    for report in reports:
        jsonschema.validate(report, schema)
        model = llmd_benchmark_report.load_benchmark_report(copy.deepcopy(report))
        assert isinstance(model, llmd_benchmark_report.BenchmarkReportV02)
    first = reports[3]  # step 3: concurrency 64, repeat 0
    load = first["scenario"]["load"]["standardized"]
    assert (load["stage"], load["concurrency"]) == (3, 64)
    perf = first["results"]["request_performance"]["aggregate"]
    assert perf["throughput"]["total_token_rate"] == {"units": "tokens/s", "mean": 757.0 * 0.996}
    engine = first["scenario"]["stack"][0]["standardized"]
    assert engine["accelerator"] == {"model": "NVIDIA H200", "count": 8,
                                     "parallelism": {"tp": 8}}
    power = first["results"]["observability"]["components"][0]["aggregate"]["power_consumption"]
    assert power == {"units": "Watts", "mean": 8 * (200.0 + 64 * 3)}
    assert len({r["run"]["uid"] for r in reports}) == len(reports)
    assert len({r["run"]["eid"] for r in reports}) == 1  # one experiment: the run
    # The validators are live: a wrong unit is refused by the models (the JSON Schema does not
    # encode units per field), a field the schema lacks by both.
    bad = copy.deepcopy(first)
    bad["results"]["request_performance"]["aggregate"]["latency"]["time_to_first_token"][
        "units"] = "tokens/s"
    with pytest.raises(ValueError):
        llmd_benchmark_report.load_benchmark_report(bad)
    unknown = copy.deepcopy(first)
    unknown["scenario"]["load"]["standardized"]["knee"] = 64
    with pytest.raises(ValueError):
        llmd_benchmark_report.load_benchmark_report(copy.deepcopy(unknown))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(unknown, schema)


def test_benchmark_report_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "runs.db"
    run = reference_run(db, hostile=True)
    out = tmp_path / "br.json"
    assert main(["export", str(run), "--format", "benchmark-report", "-o", str(out),
                 "--db", str(db)]) == 0
    files = sorted(tmp_path.glob("br_*.json"))
    assert len(files) == len(REFERENCE) + 1  # the failed step has a report with no results
    for path in files:
        report = llmd_benchmark_report.import_benchmark_report(str(path))
        assert isinstance(report, BenchmarkReportV02)
        assert report.scenario is not None and report.scenario.stack is not None
    last = json.loads(files[-1].read_text())
    assert last["results"] == {} and last["scenario"]["load"]["standardized"]["concurrency"] == 256


def test_unknown_run_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "runs.db"
    reference_run(db)
    assert main(["export", "99", "--format", "csv", "--db", str(db)]) == 2
    assert "no run 99" in capsys.readouterr().err
