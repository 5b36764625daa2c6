"""A stored tune state is untrusted text (issue 41, Low): `plateau tune --report` and
`--resume` on a crafted `tunes` row (wrong types, NaN, Infinity, a huge row, truncated JSON,
nesting past the parser's depth, a number past int's digit limit, not an object) and on a
database that is not a file each end with one line naming the database and the key, exit
non-zero, and start nothing (the demo's `--resume` refuses before any server is started).
Real SQLite rows and the real CLI."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from console.cli import main
from console.jobs.tune import new_state
from console.jobs.tune_models import TuneRequest, TuneState, state_json
from console.jobs.tune_stored import MAX_STATE_CHARS
from console.store.db import RunStore
from tests.support.virtual_tune import reference_profile


def _good_state() -> dict[str, Any]:
    request = TuneRequest.model_validate({"host": "demo", "profile": "cutlass-moe",
                                          "spec": {"concurrency": [16, 32]}})
    return state_json(new_state(request, reference_profile(Path("/nonexistent"))))


def _with(key: str, value: Any) -> str:
    data = _good_state()
    data[key] = value
    return json.dumps(data)


CRAFTED: dict[str, tuple[str, str]] = {
    # name: (stored text, what the one line must name)
    "wrong type": (_with("restarts", "many"), "restarts"),
    "wrong nested type": (_with("ladder", [{"step": "x"}]), "ladder.0.step"),
    "NaN": (_with("gain_pct", float("nan")), "gain_pct: nan is not a finite number"),
    "Infinity in a dict": (_with("value", {"16": float("inf")}),
                           "value.16: inf is not a finite number"),
    "number past float": (json.dumps(_good_state())[:-1] + ', "minutes": 1e999}',
                          "minutes: inf is not a finite number"),
    "truncated JSON": (json.dumps(_good_state())[:40], "not valid JSON"),
    "nested past the parser": ("[" * 100_000 + "]" * 100_000, "not valid JSON"),
    "a number past int's digits": (_with("restarts", 0)[:-1] + ', "resumed": ' + "9" * 5000
                                   + "}", "not valid JSON"),
    "not an object": ("[1, 2]", "a JSON list, not an object"),
    "missing request": (json.dumps({"start": _good_state()["start"]}), "request: Field required"),
    "hostile key": (_with("start_value", {"\x1b[2J16": 1.0}), "start_value.16.[key]"),
    "huge": ('{"notes": ["' + "x" * MAX_STATE_CHARS + '"]}', "more than the"),
}


def _store_row(db: Path, text: str) -> int:
    RunStore(db).close()  # the schema
    with sqlite3.connect(db) as conn:
        cursor = conn.execute("INSERT INTO tunes (created_at, updated_at, host, status, state)"
                              " VALUES (0, 0, 'demo', 'running', ?)", (text,))
        return int(cursor.lastrowid or 0)


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and captured.out == "", captured
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    return lines[0]


@pytest.mark.parametrize("name", list(CRAFTED))
def test_a_crafted_state_is_one_line_naming_the_database_and_key(
        name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text, said = CRAFTED[name]
    db = tmp_path / "h.sqlite"
    tune_id = _store_row(db, text)
    assert main(["tune", "--report", str(tune_id), "--db", str(db)]) == 1
    line = _one_line(capsys)
    assert line.startswith(f"plateau: tune {tune_id} in {db}: ") and said in line, line
    assert "\x1b" not in line


def test_resume_refuses_a_crafted_state_before_starting_anything(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "config.toml"
    config.write_text("")
    monkeypatch.setenv("PLATEAU_CONFIG", str(config))
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the demo's run dir: gone again after
    db = tmp_path / "h.sqlite"
    tune_id = _store_row(db, _with("ladder", [{"step": 1, "cause": "c", "change": "x",
                                               "why": "w", "outcome": "maybe"}]))
    assert main(["tune", "--demo", "--resume", str(tune_id), "--db", str(db)]) == 1
    line = _one_line(capsys)
    assert f"tune {tune_id} in {db}: ladder.0.outcome: Input should be" in line, line
    assert not list(tmp_path.glob("plateau-demo-*"))  # no demo run dir left


def test_a_good_state_still_reads_back(tmp_path: Path) -> None:
    from console.jobs.tune import load_state

    db = tmp_path / "h.sqlite"
    tune_id = _store_row(db, json.dumps(_good_state()))
    state = load_state(RunStore(db), tune_id)
    assert isinstance(state, TuneState) and state.request.spec.concurrency == [16, 32]


@pytest.mark.parametrize("kind", ["directory", "fifo", "junk file"])
def test_a_database_that_is_not_a_database_file_is_one_line(
        kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "h.sqlite"
    if kind == "directory":
        db.mkdir()
    elif kind == "fifo":
        os.mkfifo(db)
    else:
        db.write_bytes(b"junk" * 100)
    assert main(["tune", "--report", "1", "--db", str(db)]) == 1
    line = _one_line(capsys)
    assert line.startswith(f"plateau: history database {db}: "), line
