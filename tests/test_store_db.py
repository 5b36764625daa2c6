"""Run history: real SQLite files, round trips, exports, interrupted runs."""

from __future__ import annotations

import csv
import io
import json
import math
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from console.bench.compare import compare_runs
from console.store.db import SCHEMA_VERSION, RunStore
from console.store.export import to_csv, to_json, to_markdown
from console.store.models import RunMeta
from console.store.paths import default_db_path
from tests.support.bench_fixtures import fake_step

META = RunMeta(
    host="gpu-box-1",
    server_version="0.5.23",
    profile="cutlass-moe",
    flags={"tp": 8, "moe-runner-backend": "cutlass"},
    server_info={"version": "0.5.23", "tp_size": 8},
    spec={"input_len": 256},
)


def test_round_trip_and_wal(bench_db: Path) -> None:
    with RunStore(bench_db) as store:
        run_id = store.create_run(META)
        store.add_step(run_id, fake_step(1, 100.0, index=0))
        store.add_step(run_id, fake_step(2, 0, index=1, status="failed"))
        store.finish_run(run_id, "finished")
        run = store.get_run(run_id)
    assert run.summary.meta == META
    assert run.summary.status == "finished"
    assert [s.concurrency for s in run.steps] == [1, 2]
    assert run.steps[0] == fake_step(1, 100.0, index=0)
    assert run.steps[1].error == "server died" and run.steps[1].log_tail == ["[2026] ERROR boom"]
    assert (run.summary.steps_ok, run.summary.steps_failed) == (1, 1)
    with sqlite3.connect(bench_db) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_each_step_is_visible_to_another_connection_at_once(bench_db: Path) -> None:
    writer = RunStore(bench_db)
    run_id = writer.create_run(META)
    writer.add_step(run_id, fake_step(4, 400.0))
    with RunStore(bench_db) as reader:
        assert len(reader.get_run(run_id).steps) == 1
    writer.close()


def test_a_run_whose_writer_died_reads_as_interrupted(bench_db: Path) -> None:
    code = (
        "import sys; from console.store.db import RunStore; from console.store.models import "
        "RunMeta; s = RunStore(sys.argv[1]); s.create_run(RunMeta(host='h'))"
    )
    subprocess.run([sys.executable, "-c", code, str(bench_db)], check=True)
    with RunStore(bench_db) as store:
        (summary,) = store.list_runs()
        assert summary.status == "interrupted"
        mine = store.create_run(META)
        assert store.get_run(mine).summary.status == "running"


def test_list_delete_and_latest(bench_db: Path) -> None:
    with RunStore(bench_db) as store:
        a = store.create_run(META)
        store.add_step(a, fake_step(8, 800.0))
        b = store.create_run(META.model_copy(update={"label": "second"}))
        assert [r.id for r in store.list_runs()] == [b, a]
        assert store.list_runs()[1].best_total_tok_s == 800.0
        assert store.latest_run_id() == b
        assert store.delete_run(a) and not store.delete_run(a)
        with pytest.raises(KeyError):
            store.get_run(a)


def test_exports(bench_db: Path) -> None:
    with RunStore(bench_db) as store:
        run_id = store.create_run(META)
        for i, (c, t) in enumerate([(1, 100.0), (2, 190.0), (4, 200.0)]):
            store.add_step(run_id, fake_step(c, t, index=i))
        store.add_step(run_id, fake_step(8, 0, index=3, status="failed"))
        store.add_step(run_id, fake_step(16, 210.0, index=4).model_copy(
            update={"raw": {"request_rate": math.inf}}))  # fmt: skip
        run = store.get_run(run_id)
    rows = list(csv.DictReader(io.StringIO(to_csv(run))))
    assert [r["concurrency"] for r in rows] == ["1", "2", "4", "8", "16"]
    assert float(rows[1]["total_tok_s"]) == 190.0 and float(rows[1]["output_tok_s"]) == 47.5
    assert rows[3]["status"] == "failed" and rows[3]["error"] == "server died"
    data = json.loads(to_json(run), parse_constant=lambda c: pytest.fail(f"non-JSON {c}"))
    assert data["steps"][4]["raw"]["request_rate"] is None  # Infinity made strict-JSON safe
    assert data["knee"].startswith("saturates at ~2")
    md = to_markdown(run)
    assert "| concurrency |" in md and "output_tok_s | total_tok_s" in md
    assert "- concurrency 8: server died" in md
    assert "--moe-runner-backend cutlass" in md


def test_db_path_env_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PLATEAU_DB", str(tmp_path / "x.db"))
    assert default_db_path() == tmp_path / "x.db"
    monkeypatch.delenv("PLATEAU_DB")
    assert default_db_path().name == "history.sqlite3"


def test_compare_flags_noise_only_with_repeats() -> None:
    a = [fake_step(4, 1000.0), fake_step(4, 1040.0, repeat=1), fake_step(8, 1500.0)]
    b = [fake_step(4, 1030.0), fake_step(4, 1050.0, repeat=1), fake_step(8, 1800.0),
         fake_step(16, 1900.0)]  # fmt: skip
    comparison = compare_runs(a, b)
    row4, row8 = comparison.rows
    total4 = row4.get("total tok/s")
    assert total4.delta == pytest.approx(20.0) and total4.pct == pytest.approx(1.96, abs=0.01)
    assert total4.within_noise is True
    total8 = row8.get("total tok/s")
    assert total8.pct == pytest.approx(20.0) and total8.better is True
    assert total8.within_noise is None  # no repeats at 8: noise unknown
    assert comparison.only_b == (16,)


# The schema as the first release wrote it (before steady state and A/B pairs).
_V1_SCHEMA = """
CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, started_at REAL NOT NULL,
    finished_at REAL, status TEXT NOT NULL, host TEXT NOT NULL DEFAULT '',
    server_url TEXT NOT NULL DEFAULT '', server_version TEXT NOT NULL DEFAULT '',
    profile TEXT NOT NULL DEFAULT '', flags TEXT NOT NULL DEFAULT '{}', server_info TEXT,
    spec TEXT NOT NULL DEFAULT '{}', engine TEXT NOT NULL DEFAULT 'native',
    label TEXT NOT NULL DEFAULT '', writer TEXT NOT NULL DEFAULT '');
CREATE TABLE steps (id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, idx INTEGER NOT NULL,
    concurrency INTEGER NOT NULL, repeat INTEGER NOT NULL, status TEXT NOT NULL, error TEXT,
    log_tail TEXT NOT NULL DEFAULT '[]', metrics TEXT, raw TEXT, output_tok_s REAL,
    total_tok_s REAL, started_at REAL, finished_at REAL);
"""


def test_an_old_database_is_migrated_and_keeps_its_runs(bench_db: Path) -> None:
    from console.bench.models import SteadyState

    old_step = fake_step(4, 400.0)
    with sqlite3.connect(bench_db) as raw:
        raw.executescript(_V1_SCHEMA)
        raw.execute("INSERT INTO runs (started_at, status, profile) VALUES (1, 'finished', 'a')")
        raw.execute(
            "INSERT INTO steps (run_id, idx, concurrency, repeat, status, metrics, total_tok_s)"
            " VALUES (1, 0, 4, 0, 'ok', ?, 400.0)",
            (old_step.metrics.model_dump_json(exclude={"steady"}),),  # type: ignore[union-attr]
        )
    with RunStore(bench_db) as store:
        old = store.get_run(1)
        assert old.steps[0].metrics is not None and old.steps[0].metrics.steady is None
        run_id = store.create_run(META)
        steady = SteadyState(ratio=0.8, threshold=4, reached=True, total_tok_s=420.0,
                             output_tok_s=100.0)
        step = old_step.model_copy(
            update={"metrics": old_step.metrics.model_copy(update={"steady": steady})}  # type: ignore[union-attr]
        )
        store.add_step(run_id, step)
        said = {"sentence": "B +5.0% \u00b1 1.0% at 4: real"}
        pair = store.save_pair(1, run_id, said)
        assert store.get_run(run_id).steps[0] == step
        assert store.pair_of(run_id) == (pair, 1, run_id, said)
    with sqlite3.connect(bench_db) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        row = raw.execute(
            "SELECT steady_total_tok_s, steady_reached FROM steps ORDER BY id"
        ).fetchall()
    assert row == [(None, None), (420.0, 1)]
    with RunStore(bench_db) as store:  # opening again changes nothing
        assert store.delete_run(1)
        assert store.pair_of(run_id) is None
