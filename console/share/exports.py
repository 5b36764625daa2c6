"""`plateau export`'s formats: the history's CSV/JSON (console.store.export) plus OpenMetrics
and llm-d's Benchmark Report, each a function of the stored run and its evidence."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from console.diagnose.models import RunEvidence
from console.share.benchmark_report import benchmark_reports
from console.share.openmetrics import to_openmetrics
from console.store.export import finite_or_null, to_csv, to_json
from console.store.models import RunRecord

FORMATS = ("csv", "json", "openmetrics", "benchmark-report")


def benchmark_report_lines(run: RunRecord, evidence: RunEvidence | None) -> str:
    """JSON Lines: one Benchmark Report per step, each line a whole report."""
    return "".join(json.dumps(finite_or_null(r), allow_nan=False) + "\n"
                   for r in benchmark_reports(run, evidence))


def export_text(fmt: str, run: RunRecord, evidence: RunEvidence | None) -> str:
    simple: dict[str, Callable[[RunRecord], str]] = {
        "csv": to_csv, "json": to_json, "openmetrics": to_openmetrics}
    if fmt in simple:
        return simple[fmt](run)
    if fmt == "benchmark-report":
        return benchmark_report_lines(run, evidence)
    raise ValueError(f"unknown export format {fmt!r}")


def write_benchmark_reports(path: Path, run: RunRecord, evidence: RunEvidence | None
                            ) -> list[Path]:
    """One file per step; with several, the step's number goes before the extension
    (report.json -> report_0.json, report_1.json), as llm-d's own converter names them."""
    reports: list[dict[str, Any]] = benchmark_reports(run, evidence)
    if len(reports) == 1:
        targets = [path]
    else:
        targets = [path.with_name(f"{path.stem}_{n}{path.suffix}") for n in range(len(reports))]
    for target, report in zip(targets, reports, strict=True):
        target.write_text(json.dumps(finite_or_null(report), indent=2, allow_nan=False) + "\n",
                          encoding="utf-8")
    return targets
