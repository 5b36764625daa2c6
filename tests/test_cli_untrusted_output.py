"""Host-written text printed by headless commands never reaches the terminal raw: a crafted
server version in `history --export` and a crafted file name in `logscan`."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.bench.models import StepMetrics, StepResult
from console.cli import main
from console.store.db import RunStore
from console.store.models import RunMeta

HOSTILE = "0.5.23\x1b]0;pwned\x07\x1b[2J\x9b31m"


def _raw_controls(text: str) -> list[str]:
    return [c for c in text if c in "\x1b\x07\x9b"]


@pytest.mark.parametrize("fmt", ["md", "csv"])
def test_history_export_sanitises_what_the_host_wrote(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    db = tmp_path / "h.db"
    with RunStore(db) as store:
        run = store.create_run(RunMeta(host="box", server_version=HOSTILE, profile=HOSTILE))
        store.add_step(run, StepResult(index=0, concurrency=1, status="failed",
                                       error=f"server said {HOSTILE}",
                                       metrics=StepMetrics(concurrency=1)))
        store.finish_run(run, "failed")
    assert main(["history", "--db", str(db), "--export", str(run), "--format", fmt]) == 0
    out = capsys.readouterr().out
    assert _raw_controls(out) == []
    assert "0.5.23" in out  # shown, made harmless, not dropped


def test_logscan_sanitises_a_crafted_file_name(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "x\x1b]0;pwned\x07.log"
    log.write_text("[2026-03-14 12:00:01 TP0] Load weight begin. avail mem=94.51 GB\n")
    assert main(["logscan", str(log)]) == 0
    out = capsys.readouterr().out
    assert "x.log" in out and _raw_controls(out) == []


def test_a_step_that_completed_no_request_shows_no_rates() -> None:
    from console.bench.report import steps_table

    starved = StepResult(index=0, concurrency=64, status="ok", metrics=StepMetrics(
        concurrency=64, completed=0, incomplete=64, duration_s=30.0, output_tok_s=512.0,
        total_tok_s=9000.0, request_per_s=0.0))
    fine = StepResult(index=1, concurrency=8, status="ok", metrics=StepMetrics(
        concurrency=8, completed=8, duration_s=10.0, output_tok_s=100.0, total_tok_s=900.0))
    starved_row, fine_row = steps_table([starved, fine]).splitlines()[2:]
    assert "no request completed" in starved_row and "512" not in starved_row
    assert "9,000" not in starved_row and "9000" not in starved_row
    assert "900" in fine_row
