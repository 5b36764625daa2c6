"""A stored run whose server died leads with the crash too (issue 37 item 4): the sweep keeps
the server log's tail with the failed step, and `plateau diagnose RUN` (text and JSON), the
Why view and the Markdown/HTML report read it as logscan reads a log. Real SQLite; the tail
is a real crash log of the corpus (gh4547: `RuntimeError: CUDA error: out of memory`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.app.views_data import crash_sentence, latest_diagnosis
from console.cli import main
from console.share.report_md import inert
from console.store.db import RunStore
from tests.support.report_fixtures import store_run
from widgets.why_view import why_text

REAL = Path(__file__).parent / "data" / "logs" / "real"
TAIL = (REAL / "gh4547-a100-runtimeerror-cuda-oom.log").read_text("utf-8").splitlines()
SENTENCE = "GPU out of memory at c=256 (step 5): RuntimeError: CUDA error: out of memory"


def _run(db: Path, tail: list[str]) -> int:
    with RunStore(db) as store:
        return store_run(store, failed_log=tail)


def test_diagnose_run_leads_with_the_crash(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "runs.db"
    run = _run(db, TAIL)
    assert main(["diagnose", str(run), "--db", str(db)]) == 0
    out = capsys.readouterr().out.split("\n")
    assert out[0] == f"crash: {SENTENCE}"
    assert out[1].startswith(f"run {run} (")
    assert main(["diagnose", str(run), "--db", str(db), "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert list(body)[:2] == ["run_id", "crash"]
    assert body["crash"] == {"step": 5, "concurrency": 256, "kind": "oom",
                             "title": "GPU out of memory", "line": 14, "timestamp": None,
                             "text": "RuntimeError: CUDA error: out of memory"}


def test_the_report_leads_with_the_crash(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "runs.db"
    run = _run(db, TAIL)
    html = tmp_path / "r.html"
    assert main(["report", str(run), "--md", "--html", str(html), "--db", str(db)]) == 0
    md = capsys.readouterr().out
    # host-written text is escaped for Markdown (console/share/report_md.py inert): no link
    # or emphasis can start in it, and it reads as written
    assert f"**crash**: {inert(SENTENCE)}" in md
    assert md.index("**crash**") < md.index("knee: ")
    page = html.read_text("utf-8")
    assert f'<p class="crash"><strong>crash</strong>: {SENTENCE}</p>' in page
    assert page.index('class="crash"') < page.index("<p>knee: ")


def test_the_why_view_of_a_stored_run_leads_with_the_crash(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    _run(db, TAIL)
    diagnosis, run, note = latest_diagnosis(db, "demo")
    assert crash_sentence(run) == SENTENCE
    assert why_text(diagnosis, note, (), crash_sentence(run)).plain.startswith(
        f"CRASH: {SENTENCE}\n")


def test_a_run_without_a_crash_says_none(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "runs.db"
    run = _run(db, ["[2026-01-05 10:00:01 TP0] Decode batch, #running-req: 8"])
    assert main(["diagnose", str(run), "--db", str(db)]) == 0
    assert "crash" not in capsys.readouterr().out
    assert crash_sentence(latest_diagnosis(db, "demo")[1]) == ""


def test_a_hostile_crash_line_stays_text(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "runs.db"
    hostile = "RuntimeError: CUDA error: out of memory <script>x</script> | `y` \x1b]0;t\x07"
    run = _run(db, [*TAIL[:-1], hostile])
    html = tmp_path / "r.html"
    assert main(["report", str(run), "--md", "--html", str(html), "--db", str(db)]) == 0
    md = capsys.readouterr().out
    assert "**crash**: GPU out of memory at c=256" in md
    assert "<script>" not in md and "\x1b" not in md and "&lt;script&gt;" in md
    page = html.read_text("utf-8")
    assert "<script>x" not in page and "\x1b" not in page
    assert main(["diagnose", str(run), "--db", str(db)]) == 0
    assert "\x1b" not in capsys.readouterr().out
