"""The Why view's ladder line at 80x24: the decode batches of a real log against its captured
ladder (`|` at the largest size) and the proposed ceiling, one line under the knee."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from console.diagnose.log_diagnosis import diagnose_log, open_log
from tests.test_diagnose_crash_first import WhyApp
from widgets.why_view import why_text

REAL = Path(__file__).parent / "data" / "logs" / "real"
LOG = REAL / "hwaminjung-qwen3-4b-v0.5.18-eager-above-24-kv-retract.log"


def test_the_why_text_has_one_ladder_line_that_fits_80_columns() -> None:
    result = diagnose_log(open_log(str(LOG)), path=LOG.name)
    plain = why_text(result.diagnosis, "note", result.effective).plain
    ladder = [line for line in plain.splitlines() if line.startswith("ladder ")]
    assert len(ladder) == 1 and len(ladder[0]) <= 78
    assert "cap 24 " in ladder[0] and "|" in ladder[0] and ladder[0].endswith("→ 68")
    # the graph cause's suggestion is the proposed ladder, with its cost beside it
    cause = next(c for c in result.diagnosis.causes if c.id == "cuda-graph-ceiling")
    assert cause.suggest.flags == {"cuda-graph-max-bs-decode": 68}
    assert any(e.source == "ladder" and "graph memory ~" in e.text for e in cause.evidence)


def test_why_view_ladder_line_snapshot(snap_compare: Any) -> None:
    assert snap_compare(WhyApp(LOG), terminal_size=(80, 24))
