"""The HTML report's ladder section: a stored run's Decode rows against its captured sizes,
the figures as logscan says them, the histogram as a table; host text escaped."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import pytest

from console.cli import main
from tests.support.report_fixtures import reference_run


def test_the_report_has_a_ladder_section(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run = reference_run(db)
    out = tmp_path / "run.html"
    assert main(["report", str(run), "--html", str(out), "--db", str(db)]) == 0
    page = out.read_text()
    assert "<h4>Decode CUDA-graph ladder</h4>" in page
    text = unescape(re.findall(r'<pre class="ladder">(.*?)</pre>', page, re.DOTALL)[0])
    assert "captured [1, 2, 4, 8, 16, 32, 48, 64]" in text
    # the fixture's steps above 64 are eager, each 12 Decode rows at its level
    table = re.findall(rf'<table id="ladder-{run}">(.*?)</table>', page, re.DOTALL)[0]
    rows = re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>")[1])
    cells = [re.findall(r">([^<]*)</td>", row) for row in rows]
    assert ["128", "12", "0", "12", "eager"] in cells
    assert ["64", "12", "12", "0", "64"] in cells
    assert "proposal: --cuda-graph-bs-decode" in text


def test_diagnose_run_json_has_the_ladder(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                          ) -> None:
    db = tmp_path / "runs.db"
    run = reference_run(db)
    assert main(["diagnose", str(run), "--json", "--db", str(db)]) == 0
    ladder = json.loads(capsys.readouterr().out)["ladder"]
    assert ladder["ladder"] == [1, 2, 4, 8, 16, 32, 48, 64]
    assert {"histogram", "coverage", "padding_waste", "memory", "proposal"} <= set(ladder)
    by_batch = {row["batch"]: row for row in ladder["histogram"]}
    assert by_batch[128]["eager"] == 12 and by_batch[128]["runs"] is None
    assert ladder["proposal"]["sizes"][-1] >= 128
