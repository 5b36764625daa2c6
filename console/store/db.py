"""SQLite run history (stdlib sqlite3, WAL). Each step is committed the moment it finishes,
so a console killed mid-sweep keeps every completed step."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from console.bench.models import StepResult
from console.errors import StoreError
from console.redact import stored_server_info
from console.store.models import RunMeta, RunRecord, RunStatus, RunSummary
from console.store.paths import default_db_path
from console.text import redact_secrets

if TYPE_CHECKING:  # the diagnosis loads with the first run that has evidence
    from console.bench.bootfloor import BootFloor
    from console.bench.models import StepMetrics
    from console.diagnose.models import RunEvidence, StepEvidence

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    started_at REAL NOT NULL,
    finished_at REAL,
    status TEXT NOT NULL,
    host TEXT NOT NULL DEFAULT '',
    server_url TEXT NOT NULL DEFAULT '',
    server_version TEXT NOT NULL DEFAULT '',
    profile TEXT NOT NULL DEFAULT '',
    flags TEXT NOT NULL DEFAULT '{}',
    server_info TEXT,
    spec TEXT NOT NULL DEFAULT '{}',
    engine TEXT NOT NULL DEFAULT 'native',
    label TEXT NOT NULL DEFAULT '',
    writer TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS steps (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    concurrency INTEGER NOT NULL,
    repeat INTEGER NOT NULL,
    status TEXT NOT NULL,
    error TEXT,
    log_tail TEXT NOT NULL DEFAULT '[]',
    metrics TEXT,
    raw TEXT,
    output_tok_s REAL,
    total_tok_s REAL,
    started_at REAL,
    finished_at REAL
);
CREATE INDEX IF NOT EXISTS steps_run ON steps(run_id, idx);
CREATE TABLE IF NOT EXISTS ab_pairs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at REAL NOT NULL,
    run_a INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    run_b INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    verdict TEXT NOT NULL DEFAULT '{}'
);
-- Diagnosis evidence (console/diagnose): one row per step (idx = the step's index) plus the
-- run-level facts (idx = -1). Added after the first release: CREATE IF NOT EXISTS is the
-- migration for older databases, which simply have no evidence for their old runs.
CREATE TABLE IF NOT EXISTS evidence (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, idx)
);
-- `plateau tune` (console/jobs/tune.py): the whole tune's state as JSON, written after every
-- finished A/B, so a tuner killed mid-A/B resumes from the last one (`--resume`).
CREATE TABLE IF NOT EXISTS tunes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    host TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT '{}'
);
-- Issue 40: how much fresh boots of one profile differ (console/bench/bootfloor.py), from an
-- A/A (`plateau ab --aa`); the newest per host+profile+version is the one verdicts read.
CREATE TABLE IF NOT EXISTS boot_floors (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at REAL NOT NULL,
    host TEXT NOT NULL,
    profile TEXT NOT NULL,
    version TEXT NOT NULL,
    floor TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS boot_floors_key ON boot_floors(host, profile, version, id);
"""
RUN_FACTS_IDX = -1

# Columns added after the first release, with their declarations: an old database gets them
# (NULL for the rows it already had) when it is opened. Order matters only for readability.
_ADDED_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("steps", "steady_total_tok_s", "REAL"),  # steady-state window's total tok/s
    ("steps", "steady_output_tok_s", "REAL"),
    ("steps", "steady_reached", "INTEGER"),  # 1 / 0; NULL: measured before steady state existed
    # Issue 29: goodput under the sweep's SLO (its detail is in `metrics`), and the step's
    # energy (console/bench/energy.py) as JSON with its J per output token alongside.
    ("steps", "goodput_rps", "REAL"),
    ("steps", "energy", "TEXT"),
    ("steps", "j_per_output_token", "REAL"),
    # An open-loop step's offered rate (inf as SQLite's Inf): a failed step keeps its place
    # on a request-rate sweep's axis without metrics to read it from.
    ("steps", "request_rate", "REAL"),
    ("steps", "gpus", "INTEGER"),  # GPUs serving the model (console/bench/gpus.py)
    # Issue 36: the inference engine the run measured (console/engines/): sglang, openai,
    # transformers-serve; '' for runs stored before engines were told apart (SGLang's).
    ("runs", "server_engine", "TEXT NOT NULL DEFAULT ''"),
    # Issue 40: the warm-up a step left out of its steady figures (or the sweep's warm-up
    # load before it), in seconds; its detail is in `metrics` (StepMetrics.warmup).
    ("steps", "warmup_s", "REAL"),
)
# 6: issue 36's and issue 40's columns were each 5 on their own branch.
SCHEMA_VERSION = 6


def _warmup_s(metrics: StepMetrics | None) -> float | None:
    """Seconds of warm-up a step's steady figures left out (or its sweep's warm-up load)."""
    if metrics is None:
        return None
    found = [w.seconds for w in (metrics.warmup, metrics.warmup_load)
             if w is not None and w.detected]
    return sum(found) if found else None


def _writer_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _pid_alive(writer: str) -> bool:
    host, _, pid = writer.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return True  # another machine: we cannot tell, assume it is still running
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _migrate(db: sqlite3.Connection) -> None:
    """Bring an older history database up to this schema (add what is missing, keep rows)."""
    if db.execute("PRAGMA user_version").fetchone()[0] >= SCHEMA_VERSION:
        return
    for table, column, declaration in _ADDED_COLUMNS:
        have = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        if column not in have:
            db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def _why(exc: BaseException) -> str:
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)
        if code == sqlite3.SQLITE_FULL:
            return "disk full"
        if code is not None and code & 0xFF == sqlite3.SQLITE_READONLY:
            return "read-only"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc)


def _is_read_only_problem(exc: BaseException) -> bool:
    if isinstance(exc, PermissionError):
        return True
    if isinstance(exc, OSError):
        return exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM)
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", 0) or 0
        return code & 0xFF in (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN)
    return False


class RunStore:
    """Run history. Thread-safe (one connection, one lock); cheap to open and close."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path).expanduser() if path else default_db_path()
        self._lock = threading.Lock()
        self.read_only = False
        try:
            self._db = self._open_writable()
        except (OSError, sqlite3.Error) as exc:
            # A history someone made read-only (or on a read-only mount) can still be read.
            if not _is_read_only_problem(exc) or not os.path.isfile(self.path):
                raise StoreError(f"history database {self.path}: {_why(exc)}") from None
            self._db = self._open_read_only(exc)
            self.read_only = True

    def _open_writable(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = None
        try:
            if self.path.is_dir():
                raise IsADirectoryError(21, "is a directory")
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=10, check_same_thread=False)
            db.row_factory = sqlite3.Row
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA foreign_keys=ON")
            db.executescript(_SCHEMA)
            _migrate(db)
            db.commit()
        except BaseException:
            if db is not None:
                db.close()  # never leak the connection of a store that failed to open
            raise
        return db

    def _open_read_only(self, first: BaseException) -> sqlite3.Connection:
        # mode=ro still needs to create the WAL's -shm beside the file; immutable=1 does not
        # (at worst it misses rows a concurrent writer has not checkpointed yet).
        uri = self.path.resolve().as_uri()
        for query in ("mode=ro", "immutable=1"):
            db: sqlite3.Connection | None = None
            try:
                db = sqlite3.connect(f"{uri}?{query}", uri=True, check_same_thread=False)
                db.row_factory = sqlite3.Row
                db.execute("SELECT COUNT(*) FROM runs").fetchone()
                return db
            except sqlite3.Error:
                if db is not None:
                    db.close()
        raise StoreError(f"history database {self.path}: {_why(first)}") from None

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ writing

    @contextlib.contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """The connection, under the lock, for one write + commit. A failed write (disk
        full, read-only) rolls back and becomes one StoreError line; what was committed
        before stays."""
        with self._lock:
            if self.read_only:
                raise StoreError(f"history database {self.path}: read-only (can only be read)")
            try:
                yield self._db
                self._db.commit()
            except sqlite3.Error as exc:
                with contextlib.suppress(sqlite3.Error):
                    self._db.rollback()
                raise StoreError(f"history database {self.path}: {_why(exc)}") from None

    def create_run(self, meta: RunMeta, *, started_at: float | None = None) -> int:
        with self._writing() as db:
            cursor = db.execute(
                "INSERT INTO runs (started_at, status, host, server_url, server_version, "
                "profile, flags, server_info, spec, engine, label, writer, server_engine) "
                "VALUES (?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    started_at or time.time(),
                    meta.host,
                    meta.server_url,
                    meta.server_version,
                    meta.profile,
                    json.dumps(meta.flags),
                    json.dumps(stored_server_info(meta.server_info))
                    if meta.server_info is not None
                    else None,
                    json.dumps(meta.spec),
                    meta.engine,
                    meta.label,
                    _writer_id(),
                    meta.server_engine,
                ),
            )
            return int(cursor.lastrowid or 0)

    def update_meta(self, run_id: int, **fields: Any) -> None:
        """Fill in what was learned after the run began (server_info, server_version...)."""
        allowed = {"server_version", "server_info", "flags", "label", "profile", "host"}
        sets, values = [], []
        for key, value in fields.items():
            if key not in allowed:
                raise ValueError(f"cannot update {key}")
            if key == "server_info" and value is not None:
                value = stored_server_info(value)
            sets.append(f"{key} = ?")
            values.append(json.dumps(value) if key in ("server_info", "flags") else value)
        if not sets:
            return
        with self._writing() as db:
            db.execute(f"UPDATE runs SET {', '.join(sets)} WHERE id = ?", (*values, run_id))

    def add_step(self, run_id: int, step: StepResult) -> None:
        """Store one finished step and commit at once."""
        metrics = step.metrics
        steady = metrics.steady if metrics else None
        slo = metrics.slo if metrics else None
        energy = step.energy
        with self._writing() as db:
            db.execute(
                "INSERT INTO steps (run_id, idx, concurrency, repeat, status, error, log_tail, "
                "metrics, raw, output_tok_s, total_tok_s, started_at, finished_at, "
                "steady_total_tok_s, steady_output_tok_s, steady_reached, goodput_rps, "
                "energy, j_per_output_token, request_rate, gpus, warmup_s) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    step.index,
                    step.concurrency,
                    step.repeat,
                    step.status,
                    step.error,
                    json.dumps([redact_secrets(line) for line in step.log_tail]),
                    _stored_json(metrics) if metrics else None,
                    json.dumps(step.raw) if step.raw is not None else None,
                    metrics.output_tok_s if metrics else None,
                    metrics.total_tok_s if metrics else None,
                    step.started_at,
                    step.finished_at,
                    steady.total_tok_s if steady and steady.reached else None,
                    steady.output_tok_s if steady and steady.reached else None,
                    int(steady.reached) if steady else None,
                    slo.goodput_rps if slo else None,
                    _stored_json(energy) if energy else None,
                    energy.j_per_output_token if energy else None,
                    step.rate,
                    step.gpus,
                    _warmup_s(metrics),
                ),
            )

    def save_floor(self, floor: BootFloor) -> int:
        """Store a measured boot-to-boot floor; verdicts read the newest of its key."""
        with self._writing() as db:
            cursor = db.execute(
                "INSERT INTO boot_floors (created_at, host, profile, version, floor) "
                "VALUES (?, ?, ?, ?, ?)",
                (floor.measured_at or time.time(), floor.host, floor.profile, floor.version,
                 floor.model_dump_json()))
            return int(cursor.lastrowid or 0)

    def boot_floor(self, host: str, profile: str, version: str) -> BootFloor | None:
        """The newest floor of host+profile+version, or None (none measured, or a read-only
        database from before floors existed)."""
        from console.bench.bootfloor import BootFloor

        try:
            with self._lock:
                row = self._db.execute(
                    "SELECT floor FROM boot_floors WHERE host = ? AND profile = ? AND "
                    "version = ? ORDER BY id DESC LIMIT 1", (host, profile, version)).fetchone()
        except sqlite3.OperationalError:
            return None
        return None if row is None else BootFloor.model_validate_json(row["floor"])

    def finish_run(self, run_id: int, status: RunStatus) -> None:
        with self._writing() as db:
            db.execute(
                "UPDATE runs SET status = ?, finished_at = ? WHERE id = ?",
                (status, time.time(), run_id),
            )

    def save_pair(self, run_a: int, run_b: int, verdict: dict[str, Any]) -> int:
        """Store an A/B pair (its two runs and the verdict as judged when it finished)."""
        with self._writing() as db:
            cursor = db.execute(
                "INSERT INTO ab_pairs (created_at, run_a, run_b, verdict) VALUES (?, ?, ?, ?)",
                (time.time(), run_a, run_b, json.dumps(verdict)),
            )
            return int(cursor.lastrowid or 0)

    def pair_of(self, run_id: int) -> tuple[int, int, int, dict[str, Any]] | None:
        """The newest A/B pair `run_id` belongs to: (pair id, run A, run B, verdict)."""
        with self._lock:
            row = self._db.execute(
                "SELECT * FROM ab_pairs WHERE run_a = ? OR run_b = ? ORDER BY id DESC LIMIT 1",
                (run_id, run_id),
            ).fetchone()
        if row is None:
            return None
        return row["id"], row["run_a"], row["run_b"], json.loads(row["verdict"] or "{}")

    def save_run_evidence(self, run_id: int, facts: RunEvidence) -> None:
        """The run-level diagnosis facts (a console.diagnose RunEvidence; steps excluded)."""
        self._save_evidence(run_id, RUN_FACTS_IDX,
                            facts.model_copy(update={"steps": []}).model_dump_json())

    def save_step_evidence(self, run_id: int, step: StepEvidence) -> None:
        """One step's diagnosis evidence (a console.diagnose StepEvidence), committed now."""
        self._save_evidence(run_id, int(step.index), step.model_dump_json())

    def _save_evidence(self, run_id: int, idx: int, data: str) -> None:
        with self._writing() as db:
            db.execute(
                "INSERT OR REPLACE INTO evidence (run_id, idx, data) VALUES (?, ?, ?)",
                (run_id, idx, redact_secrets(data)),
            )

    def load_evidence(self, run_id: int) -> RunEvidence | None:
        """The run's stored evidence as a RunEvidence, or None when none was stored."""
        from console.diagnose.models import RunEvidence, StepEvidence

        with self._lock:
            rows = self._db.execute(
                "SELECT idx, data FROM evidence WHERE run_id = ? ORDER BY idx", (run_id,)
            ).fetchall()
        if not rows:
            return None
        facts = RunEvidence()
        steps = []
        for row in rows:
            try:
                if row["idx"] == RUN_FACTS_IDX:
                    facts = RunEvidence.model_validate_json(row["data"])
                else:
                    steps.append(StepEvidence.model_validate_json(row["data"]))
            except ValueError:
                continue  # a row written by a newer version: skip, never crash
        return facts.model_copy(update={"steps": steps})

    def delete_run(self, run_id: int) -> bool:
        with self._writing() as db:
            db.execute("DELETE FROM evidence WHERE run_id = ?", (run_id,))
            db.execute("DELETE FROM steps WHERE run_id = ?", (run_id,))
            db.execute("DELETE FROM ab_pairs WHERE run_a = ? OR run_b = ?", (run_id, run_id))
            cursor = db.execute("DELETE FROM runs WHERE id = ?", (run_id,))
            return cursor.rowcount > 0

    # ------------------------------------------------------------------ reading

    def list_runs(self, limit: int = 100) -> list[RunSummary]:
        with self._lock:
            rows = self._db.execute(
                "SELECT r.*, "
                "(SELECT COUNT(*) FROM steps s WHERE s.run_id = r.id AND s.status = 'ok') AS ok, "
                "(SELECT COUNT(*) FROM steps s WHERE s.run_id = r.id AND s.status != 'ok') "
                "AS bad, "
                "(SELECT MAX(total_tok_s) FROM steps s WHERE s.run_id = r.id) AS best_total, "
                "(SELECT MAX(output_tok_s) FROM steps s WHERE s.run_id = r.id) AS best_output "
                "FROM runs r ORDER BY r.id DESC LIMIT ?",
                (limit,),
            ).fetchall()
        return [self._summary(row) for row in rows]

    def get_run(self, run_id: int) -> RunRecord:
        with self._lock:
            row = self._db.execute(
                "SELECT r.*, 0 AS ok, 0 AS bad, NULL AS best_total, NULL AS best_output "
                "FROM runs r WHERE r.id = ?",
                (run_id,),
            ).fetchone()
            if row is None:
                raise KeyError(run_id)
            step_rows = self._db.execute(
                "SELECT * FROM steps WHERE run_id = ? ORDER BY idx, id", (run_id,)
            ).fetchall()
        steps = [self._step(s) for s in step_rows]
        ok = [s for s in steps if s.status == "ok" and s.metrics]
        summary = self._summary(row).model_copy(
            update={
                "steps_ok": len(ok),
                "steps_failed": len(steps) - len(ok),
                "best_total_tok_s": max(
                    (s.metrics.total_tok_s for s in ok if s.metrics), default=None
                ),
                "best_output_tok_s": max(
                    (s.metrics.output_tok_s for s in ok if s.metrics), default=None
                ),
            }
        )
        return RunRecord(summary=summary, steps=steps)

    def step_times(
        self, host: str, runs: int = 20
    ) -> list[tuple[dict[str, Any], int, float, float]]:
        """(run spec, concurrency, started_at, finished_at) of the ok steps of `host`'s
        newest `runs` runs: what an A/B's time estimate goes by."""
        with self._lock:
            rows = self._db.execute(
                "SELECT r.spec, s.concurrency, s.started_at, s.finished_at FROM steps s "
                "JOIN runs r ON r.id = s.run_id WHERE r.host = ? AND s.status = 'ok' AND "
                "r.id IN (SELECT id FROM runs WHERE host = ? ORDER BY id DESC LIMIT ?)",
                (host, host, runs),
            ).fetchall()
        return [
            (json.loads(row[0] or "{}"), row[1], row[2] or 0.0, row[3] or 0.0) for row in rows
        ]

    def latest_run_id(self) -> int | None:
        with self._lock:
            row = self._db.execute("SELECT MAX(id) FROM runs").fetchone()
        return int(row[0]) if row and row[0] is not None else None

    @staticmethod
    def _summary(row: sqlite3.Row) -> RunSummary:
        status = row["status"]
        if status == "running" and not _pid_alive(row["writer"]):
            status = "interrupted"
        meta = RunMeta(
            host=row["host"],
            server_url=row["server_url"],
            server_version=row["server_version"],
            profile=row["profile"],
            flags=json.loads(row["flags"] or "{}"),
            server_info=json.loads(row["server_info"]) if row["server_info"] else None,
            spec=json.loads(row["spec"] or "{}"),
            engine=row["engine"],
            label=row["label"],
            server_engine=row["server_engine"],
        )
        return RunSummary(
            id=row["id"],
            started_at=row["started_at"],
            finished_at=row["finished_at"],
            status=status,
            meta=meta,
            steps_ok=row["ok"],
            steps_failed=row["bad"],
            best_total_tok_s=row["best_total"],
            best_output_tok_s=row["best_output"],
        )

    @staticmethod
    def _step(row: sqlite3.Row) -> StepResult:
        """The stored step; a row that does not read back (a number stored as null, JSON
        edited outside Plateau) is one StoreError naming the run, the step and the field."""
        try:
            return RunStore._read_step(row)
        except (ValueError, TypeError, RecursionError) as exc:
            raise StoreError(f"run {row['run_id']} step {row['idx']}: its stored record does "
                             f"not read back ({_first_problem(exc)})") from None

    @staticmethod
    def _read_step(row: sqlite3.Row) -> StepResult:
        from console.bench.models import StepEnergy, StepMetrics

        # A read-only database from an older build lacks the columns added since.
        have = row.keys()
        energy = row["energy"] if "energy" in have else None
        rate = row["request_rate"] if "request_rate" in have else None
        gpus = row["gpus"] if "gpus" in have else None
        return StepResult(
            index=row["idx"],
            concurrency=row["concurrency"],
            repeat=row["repeat"],
            status=row["status"],
            metrics=StepMetrics.model_validate_json(row["metrics"]) if row["metrics"] else None,
            error=row["error"],
            log_tail=json.loads(row["log_tail"] or "[]"),
            started_at=row["started_at"] or 0.0,
            finished_at=row["finished_at"] or 0.0,
            raw=json.loads(row["raw"]) if row["raw"] else None,
            energy=StepEnergy.model_validate_json(energy) if energy else None,
            request_rate=rate,
            gpus=gpus,
        )

    # ------------------------------------------------------------------ tunes

    def save_tune(self, tune_id: int | None, host: str, status: str,
                  state: dict[str, Any]) -> int:
        """Create (tune_id None) or replace a tune's state, committed at once; its id."""
        now = time.time()
        data = redact_secrets(json.dumps(state))
        with self._writing() as db:
            if tune_id is None:
                cursor = db.execute(
                    "INSERT INTO tunes (created_at, updated_at, host, status, state) "
                    "VALUES (?, ?, ?, ?, ?)", (now, now, host, status, data))
                return int(cursor.lastrowid or 0)
            db.execute("UPDATE tunes SET updated_at = ?, status = ?, state = ? WHERE id = ?",
                       (now, status, data, tune_id))
            return tune_id

    def load_tune(self, tune_id: int, limit: int) -> tuple[int, str | None] | None:
        """(length, state text) of a tune's stored state, the text only when it is at most
        `limit` characters (its JSON is parsed by console.jobs.tune_stored), or None."""
        with self._lock:
            row = self._db.execute(
                "SELECT length(state) AS n, CASE WHEN length(state) <= ? THEN state END "
                "AS state FROM tunes WHERE id = ?", (limit, tune_id)).fetchone()
        return None if row is None else (int(row["n"] or 0), row["state"])

    def latest_tune(self, host: str | None = None, *, unfinished: bool = False) -> int | None:
        """The newest tune (of `host`; with `unfinished`, one not done)."""
        sql, args = "SELECT id FROM tunes WHERE 1=1", []
        if host is not None:
            sql, args = sql + " AND host = ?", [host]
        if unfinished:
            sql += " AND status IN ('running', 'stopped')"
        with self._lock:
            row = self._db.execute(sql + " ORDER BY id DESC LIMIT 1", args).fetchone()
        return None if row is None else int(row["id"])


def _stored_json(model: BaseModel) -> str:
    """A step's numbers as JSON that reads back: pydantic's model_dump_json writes NaN and
    Infinity as null, which its reader then refuses (the run could no longer be opened);
    Python's json writes them as NaN/Infinity, which pydantic reads."""
    return json.dumps(model.model_dump(mode="python"))


def _first_problem(exc: Exception) -> str:
    """A pydantic error's first field and message (`metrics.total_tok_s: not a number`), or
    the error itself, cut to one short line."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        first = errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        text = f"{where}: {first['msg']}" if where else str(first["msg"])
    else:
        text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:200]
