"""The history database when the disk fills mid-sweep and when it is read-only: one line,
nothing already stored lost, a read-only history still readable."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import tempfile
from pathlib import Path

import pytest

from console.bench.engines import NativeEngine
from console.bench.models import StepFinished, SweepEvent
from console.bench.sweep import run_sweep
from console.cli import main
from console.config_models import SweepPreset
from console.errors import StoreError
from console.store.db import RunStore
from console.store.models import RunMeta
from tests.support.bench_fixtures import fake_step
from tests.support.sim_fixtures import SimProcess

QUICK = SweepPreset(concurrency=[1, 2, 4], input_len=32, output_len=12, prompts_per_concurrency=1)


def _small_page_db(path: Path) -> None:
    """A real SQLite file with 512-byte pages: every step row then needs new pages, so a
    full disk is hit by the very next step (page size is fixed when the file is created)."""
    db = sqlite3.connect(path)
    db.execute("PRAGMA page_size = 512")
    db.execute("VACUUM")
    db.close()


def _fill_the_disk(store: RunStore) -> None:
    """From now on SQLite answers SQLITE_FULL ("database or disk is full") to any write that
    needs a new page, exactly as on ENOSPC: no free pages left (VACUUM), and the file may not
    grow (max_page_count cannot go below the file's size, so 1 means "as it is")."""
    store._db.execute("VACUUM")
    store._db.execute("PRAGMA max_page_count = 1")


async def test_disk_full_mid_sweep_keeps_the_stored_steps(
    ideal_sim: SimProcess, tmp_path: Path
) -> None:
    path = tmp_path / "history.sqlite3"
    _small_page_db(path)
    store = RunStore(path)

    def fill_the_disk(event: SweepEvent) -> None:
        if isinstance(event, StepFinished) and event.result.concurrency == 1:
            _fill_the_disk(store)

    with pytest.raises(StoreError) as caught:
        await run_sweep(QUICK, ideal_sim.base_url, engine=NativeEngine(), store=store,
                        on_event=fill_the_disk)  # fmt: skip
    store.close()
    message = str(caught.value)
    assert "\n" not in message
    assert message == (
        f"history database {path}: disk full; stopped at step 2, the 1 step(s) before it "
        "are stored as run 1"
    )
    with RunStore(path) as again:  # a fresh connection: no page limit, as after freeing space
        run = again.get_run(1)
    assert [s.concurrency for s in run.steps] == [1] and run.steps[0].status == "ok"
    # Marking the run failed needs a page too on a full disk; it reads as running while this
    # writer lives and as interrupted once it exits, never as finished.
    assert run.summary.status in ("failed", "running")


def test_a_write_on_a_full_disk_rolls_back_and_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "history.sqlite3"
    _small_page_db(path)
    with RunStore(path) as store:
        run_id = store.create_run(RunMeta(host="h", profile="p"))
        _fill_the_disk(store)
        with pytest.raises(StoreError, match=r"disk full$"):
            store.add_step(run_id, fake_step(1, 100.0))
        assert store.get_run(run_id).steps == []  # rolled back; the run itself kept
    assert main(["history", "--json", "--db", str(path)]) == 0
    (run,) = json.loads(capsys.readouterr().out)
    assert run["id"] == run_id


def _as_reader_without_write_access(path: Path, argv: list[str]) -> tuple[int, str, str]:
    """Run `plateau ARGV` where `path` cannot be written: as `nobody` when we are root (root
    ignores file modes), else with the file and its directory made read-only."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never returns into pytest
        code = 70
        try:
            os.close(read_fd)
            out = os.fdopen(write_fd, "w")
            import contextlib
            import io

            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
            stdout, stderr = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                code = main(argv)
            out.write(f"{code}\0{stdout.getvalue()}\0{stderr.getvalue()}")
            out.close()
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            os._exit(code)
    os.close(write_fd)
    with os.fdopen(read_fd) as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    status, said, complained = data.split("\0")
    return int(status), said, complained


def test_a_read_only_history_is_still_readable() -> None:
    # Not under pytest's tmp_path: its parents are private to root, and `nobody` must reach it.
    top = Path(tempfile.mkdtemp(prefix="plateau-ro-"))
    shared = top / "shared"
    shared.mkdir()
    path = shared / "history.sqlite3"
    with RunStore(path) as store:
        run_id = store.create_run(RunMeta(host="h", profile="p"))
        store.add_step(run_id, fake_step(4, 321.0))
        store.finish_run(run_id, "finished")
    # Readable by all, writable by none; the WAL is checkpointed away on close.
    for item in (top, shared):
        item.chmod(0o755)
    os.chmod(path, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    shared.chmod(0o555)
    try:
        code, out, err = _as_reader_without_write_access(path, ["history", "--db", str(path)])
        assert (code, err) == (0, "")
        assert "321" in out  # the best total tok/s of the stored run
        code, out, err = _as_reader_without_write_access(
            path, ["history", "--db", str(path), "--delete", str(run_id)])
        assert code == 1 and out == ""
        assert err == f"plateau: history database {path}: read-only (can only be read)\n"
    finally:
        shared.chmod(0o755)
        shutil.rmtree(top)
