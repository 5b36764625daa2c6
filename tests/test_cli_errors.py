"""Operator mistakes on the headless commands end in one clear line, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.cli import build_parser, main
from console.store.db import RunStore
from console.store.models import RunMeta
from tests.support.bench_fixtures import fake_step


def _one_line_error(capsys: pytest.CaptureFixture[str], *words: str) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.startswith("plateau: ") and err.count("\n") == 1, err
    for word in words:
        assert word in err
    return err


def test_history_export_to_a_missing_directory_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "h.db"
    with RunStore(db) as store:
        run = store.create_run(RunMeta(host="box"))
        store.add_step(run, fake_step(1, 100.0))
    target = tmp_path / "missing" / "run.md"
    assert main(["history", "--db", str(db), "--export", str(run), "-o", str(target)]) != 0
    _one_line_error(capsys, str(target))


@pytest.mark.parametrize("kind", ["not-a-db", "directory", "unmakeable"])
def test_a_bad_history_database_is_one_line(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if kind == "not-a-db":
        db = tmp_path / "text.db"
        db.write_text("this is not sqlite\n" * 100)
    elif kind == "directory":
        db = tmp_path
    else:
        blocker = tmp_path / "file"
        blocker.write_text("x")
        db = blocker / "sub" / "h.db"
    for argv in (["history"], ["compare", "1", "2"]):
        assert main([*argv, "--db", str(db)]) != 0
        _one_line_error(capsys, str(db))


def test_gpus_unknown_host_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[[hosts]]\nname = "box"\nlocal = true\n')
    assert main(["--config", str(config), "gpus", "nohost", "--once"]) == 2
    _one_line_error(capsys, "nohost")


# A --url that nothing answers at is refused before anything is stored (issue 26.9):
# tests/test_cli_issue26.py::test_sweep_of_a_dead_url_checks_first_and_stores_nothing.


async def test_a_failing_engine_prepare_does_not_leave_the_run_running(tmp_path: Path) -> None:
    from console.bench.engines import Emit, StepOutcome
    from console.bench.sweep import run_sweep
    from console.config_models import SweepPreset
    from console.errors import TransportError

    class Broken:
        name = "native"
        closed = False

        async def prepare(self, base_url: str, spec: SweepPreset) -> None:
            raise TransportError("box: connection lost")

        async def run_step(self, base_url: str, spec: SweepPreset, index: int,
                           concurrency: int, emit: Emit) -> StepOutcome:
            raise AssertionError("not reached")

        def cancel(self) -> None:
            pass

        async def close(self) -> None:
            self.closed = True

    engine = Broken()
    with RunStore(tmp_path / "h.db") as store:
        with pytest.raises(TransportError):
            await run_sweep(SweepPreset(concurrency=[1]), "http://127.0.0.1:1", engine=engine,
                            store=store, snapshot_server_info=False)
        assert store.list_runs()[0].status == "failed"
    assert engine.closed


def test_a_word_with_a_newline_is_quoted_on_the_error_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """argparse quotes the user's word in its message: a newline or an escape in it must not
    split the one error line (found by test_fuzz_cli's hypothesis run)."""
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["ab", "--", "--burstiness", "a\nb\x1b[31m"])
    assert exc.value.code == 2
    last = capsys.readouterr().err.rstrip("\n").splitlines()[-1]
    assert last.startswith("plateau") and "unrecognized" in last and "\x1b" not in last
