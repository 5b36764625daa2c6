"""`plateau report --md`: the GitHub-ready summary of a stored run and of an A/B (real SQLite):
the level table, the causes, the verdict with its intervals, the flags that differ; host text
made inert; one issue comment long at most."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.cli import main
from console.share.gather import gather
from console.share.report_md import LIMIT, report_md
from console.store.db import RunStore
from tests.support.report_fixtures import (
    HOSTILE_VERSION,
    REFERENCE,
    ab_pair,
    reference_run,
    store_run,
)


def _md(capsys: pytest.CaptureFixture[str], db: Path, *runs: int) -> str:
    capsys.readouterr()
    assert main(["report", *map(str, runs), "--md", "--db", str(db)]) == 0
    return capsys.readouterr().out


def test_ab_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "runs.db"
    a, b = ab_pair(db)
    text = _md(capsys, db, b)  # one run of a stored pair brings its partner, A first
    assert f"B = {b} cutlass-moe+cuda-graph-ceiling vs A = {a} cutlass-moe" in text
    assert "**verdict: B +6.0% \u00b1 0.5% at 64\u2013128\\: real**" in text
    assert "| 64 | 757.0 | 802.4 | +6.0% \u00b1 1.6% | better |" in text
    assert "| --cuda-graph-max-bs-decode | 64 | 128 |" in text
    assert "1. **cuda-graph-ceiling** (56%)" in text
    assert text.count("| 128 | 806.0 | 201.5 |") == 1  # A's level table
    assert len(text) < LIMIT


def test_hostile_text_is_inert(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "runs.db"
    run = reference_run(db, hostile=True)
    text = _md(capsys, db, run)
    assert HOSTILE_VERSION not in text and "<script>" not in text
    assert "&lt;img src=x onerror=alert\\(1\\)&gt;" in text
    assert [line for line in text.splitlines() if line.startswith(f"| {REFERENCE[0][0]} ")]


def test_many_runs_fit_one_comment(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    for _ in range(40):
        reference_run(db)
    with RunStore(db) as store:
        report = gather(store, list(range(1, 41)), now=0.0)
    text = report_md(report)
    assert len(text) <= LIMIT and text.rstrip().endswith("has the rest)")


def test_one_line_longer_than_a_comment_is_cut_too(tmp_path: Path) -> None:
    # The first line (the report's title) holds the profile: one 100,000-char line.
    db = tmp_path / "runs.db"
    with RunStore(db) as store:
        run = store_run(store, profile="p" * 100_000)
        report = gather(store, [run], now=0.0)
    text = report_md(report)
    assert len(text) <= LIMIT and text.rstrip().endswith("has the rest)")
