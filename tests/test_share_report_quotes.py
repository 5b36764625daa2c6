"""What the HTML report quotes from the server log, and that the README says the same.

Stored evidence keeps parsed numbers (Decode rows, counts, facts), not log lines: the lines a
report can quote verbatim are the two the run keeps, the untuned-MoE warning from startup and
a failed step's last log lines. The README once promised "quoted log lines" with every
diagnosis (issue 41): a run with neither line has none, and the README now says which."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

from console.cli import main
from console.diagnose.models import RunEvidence, StartupFacts
from console.store.db import RunStore
from tests.support.report_fixtures import HOSTILE_LOG, MOE_LINE, reference_run, store_run

ROOT = Path(__file__).resolve().parent.parent
CLAIM = ("the log lines the run keeps verbatim (the untuned-MoE warning, a failed step's last "
         "lines")


def _logs(tmp_path: Path, db: Path, run: int) -> list[str]:
    out = tmp_path / f"run-{run}.html"
    assert main(["report", str(run), "--html", str(out), "--db", str(db)]) == 0
    return [unescape(t) for t in re.findall(r'<pre class="log">(.*?)</pre>', out.read_text(),
                                            re.DOTALL)]


def test_readme_says_which_log_lines_the_report_quotes() -> None:
    row = next(line for line in (ROOT / "README.md").read_text().splitlines()
               if line.startswith("| `plateau report "))
    assert CLAIM in row, row
    assert "evidence and quoted log lines" not in row


def test_the_report_quotes_the_kept_lines_and_nothing_else(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    logs = _logs(tmp_path, db, reference_run(db, hostile=True))
    assert len(logs) == 2, logs
    # The failed step's lines (under the run's tables), then the diagnosis's startup line;
    # both as the host wrote them, shown as text, terminal escapes removed.
    assert logs[0].startswith("[2026] ERROR <script>alert(3)</script> & ")
    assert "\x1b" not in logs[0] and "\x07" not in logs[0] and HOSTILE_LOG not in logs
    assert logs[1] == MOE_LINE


def test_a_run_without_those_lines_quotes_none(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with RunStore(db) as store:
        run = store_run(store)
        store.save_run_evidence(run, RunEvidence(startup=StartupFacts(tp_size=8)))
    assert _logs(tmp_path, db, run) == []
