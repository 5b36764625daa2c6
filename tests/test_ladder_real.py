"""The decode CUDA-graph ladder against the traffic, on every real log that prints a decode
capture list and has Decode lines: `plateau logscan` and `plateau diagnose --log --json` show
the histogram against the ladder, and its counts are the sidecar's `decode_ladder` (counted
by hand with awk: the command is in each sidecar's note)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from console.commands.logscan import format_report, scan_path
from console.diagnose.log_diagnosis import diagnose_log, log_diagnosis_json, open_log
from console.logs.ladder import Ladder

REAL = Path(__file__).parent / "data" / "logs" / "real"


def _with_ladder() -> list[Path]:
    out = []
    for log in sorted(REAL.glob("*.log")):
        truth = json.loads(log.with_suffix(".truth.json").read_text(encoding="utf-8"))
        if "decode_ladder" in truth:
            out.append(log)
    return out


LOGS = _with_ladder()


def _truth(log: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(log.with_suffix(".truth.json").read_text())
    ladder: dict[str, Any] = data["decode_ladder"]
    return ladder


def _check(ladder: Ladder, truth: dict[str, Any]) -> None:
    assert ladder.ladder == truth["ladder"]
    assert ladder.decode_lines == truth["decode_lines"]
    assert ladder.graph_lines == truth["graph_true_lines"]
    assert ladder.eager_lines == truth["graph_false_lines"]
    assert ladder.max_batch == truth["max_batch"]
    assert ladder.covered_lines == truth["covered_lines"]
    assert ladder.padding_slots == truth["padding_slots"]
    assert ladder.padded_slots == truth["padded_slots"]
    assert sum(row.lines for row in ladder.histogram) == truth["decode_lines"]
    memory = ladder.memory
    if truth["capture_mem_gb"] is None:
        assert memory is None or memory.mem_gb is None
    else:
        assert memory is not None
        assert memory.mem_gb == truth["capture_mem_gb"]
        assert memory.capture_s == truth["capture_s"]


def test_every_log_with_a_capture_list_and_decode_lines_has_a_sidecar_ladder() -> None:
    """The corpus's files with both (plain substring counts) are the ones tested here."""
    both = []
    for log in sorted(REAL.glob("*.log")):
        truth = json.loads(log.with_suffix(".truth.json").read_text(encoding="utf-8"))
        text = log.read_text(encoding="utf-8")
        if truth["captured_decode_bs"] and "Decode batch" in text:
            both.append(log)
    assert both == LOGS
    assert len(LOGS) >= 10


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.stem)
def test_logscan_ladder_matches_the_sidecar(log: Path) -> None:
    report = scan_path(str(log))
    assert report.ladder is not None
    _check(report.ladder, _truth(log))
    text = format_report(report)
    section = text.split("Decode CUDA-graph ladder", 1)[1]
    truth = _truth(log)
    assert f"decode lines {truth['decode_lines']}, batch 1..{truth['max_batch']}" in section
    assert "histogram " in section
    assert f"covered by the ladder {truth['covered_lines']}/{truth['decode_lines']}" in section


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.stem)
def test_diagnose_json_ladder_matches_the_sidecar(log: Path) -> None:
    body = log_diagnosis_json(diagnose_log(open_log(str(log)), path=str(log)))
    ladder = Ladder.model_validate(body["ladder"])
    _check(ladder, _truth(log))
    json.dumps(body["ladder"], allow_nan=False)  # what `--json` prints
