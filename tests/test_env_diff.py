"""A/B results name environment differences as they name flag differences: the tune step that
unset NCCL_P2P_DISABLE read "flags: the same" in `plateau compare`, the HTML and the Markdown
report. Two stored runs (real SQLite) with the same flags and profile envs that differ in
one variable; and two with nothing different."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.cli import main
from console.share.gather import gather
from console.share.report_html import report_html
from console.share.report_md import inert, report_md
from console.store.db import RunStore
from tests.support.report_fixtures import store_run

FLAGS: dict[str, object] = {"tp": 8, "cuda-graph-max-bs-decode": 64}


def _pair(db: Path, env_b: dict[str, str]) -> tuple[int, int]:
    with RunStore(db) as store:
        a = store_run(store, flags=FLAGS, env={"NCCL_P2P_DISABLE": "1", "NCCL_DEBUG": "WARN"})
        b = store_run(store, profile="cutlass-moe+tp-allreduce-pcie", scale=2.2, flags=FLAGS,
                      env=env_b, started=1_767_700_000.0)
    return a, b


def _out(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    capsys.readouterr()
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def test_an_unset_variable_is_a_difference_everywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "runs.db"
    a, b = _pair(db, {"NCCL_DEBUG": "WARN"})
    text = _out(capsys, "compare", str(a), str(b), "--db", str(db))
    row = next(line for line in text.splitlines() if "NCCL_P2P_DISABLE" in line)
    assert row.split() == ["env", "NCCL_P2P_DISABLE", "1", "-"], row
    assert "the same" not in text
    data = json.loads(_out(capsys, "compare", str(a), str(b), "--db", str(db), "--json"))
    assert data["env_differing"] == [{"variable": "NCCL_P2P_DISABLE", "a": "1", "b": "-"}]
    assert data["flags_differing"] == []
    with RunStore(db) as store:
        report = gather(store, [a, b], now=0.0)
    md, html = report_md(report), report_html(report)
    assert f"| {inert('env NCCL_P2P_DISABLE')} | 1 | - |" in md
    assert "flags and environment: the same" not in md
    assert "<tr><td>env NCCL_P2P_DISABLE</td><td>1</td><td>-</td></tr>" in html
    assert "are the same" not in html


def test_nothing_different_says_flags_and_environment_are_the_same(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "runs.db"
    a, b = _pair(db, {"NCCL_P2P_DISABLE": "1", "NCCL_DEBUG": "WARN"})
    text = _out(capsys, "compare", str(a), str(b), "--db", str(db))
    assert "flags and environment: the same on both sides" in text
    with RunStore(db) as store:
        report = gather(store, [a, b], now=0.0)
    assert "flags and environment: the same" in report_md(report)
    assert "stored flags and environment are the same" in report_html(report)
