"""Hostile files given to `diagnose --log`, `diagnose --bench` and `sweep --trace`, each run
as the real CLI under `prlimit --as=4GiB` with a 60 s limit: every one ends in one line on
stderr naming the file and what is wrong with it (the limit it broke), exit 2, no traceback,
and a bad trace is refused before anything starts (no demo server, no run stored).

Before console/inputfile.py: a 10 GB sparse log was read for > 5 minutes, /dev/zero grew
without bound, a fifo blocked forever, nested JSON gave RecursionError tracebacks and a bad
trace a StepError traceback after the demo server had started."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from console.inputfile import BENCH_FILE, SERVER_LOG, TRACE_FILE

ROOT = Path(__file__).resolve().parent.parent
REAL_LOG = ROOT / "tests/data/logs/real/agentivium-awq7b-graphs-disabled-2026-09.log"
MEMORY = 4 << 30
SECONDS = 60


def _plateau(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PLATEAU_CONFIG": "", "PLATEAU_DB": str(cwd / "runs.db")}
    return subprocess.run(
        ["prlimit", f"--as={MEMORY}", sys.executable, "-m", "console.cli", *args],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=SECONDS,
        stdin=subprocess.DEVNULL)


def _sparse(size: int) -> Callable[[Path], str]:
    def make(where: Path) -> str:
        path = where / "sparse"
        with path.open("wb") as f:
            f.truncate(size)  # no blocks on disk: reading it yields NUL bytes, no newline
        return str(path)
    return make


def _fifo(where: Path) -> str:
    path = where / "fifo"
    os.mkfifo(path)  # nobody ever writes: opening it for reading would wait forever
    return str(path)


def _text(text: str) -> Callable[[Path], str]:
    def make(where: Path) -> str:
        path = where / "file"
        path.write_text(text)
        return str(path)
    return make


NESTED = "[" * 1_000_000
HOSTILE = [  # (name, maker, what the one line must say)
    ("10 GB sparse", _sparse(10 << 30), "10.0 GiB is over the"),
    ("fifo", _fifo, "is a fifo, not a regular file"),
    ("/dev/zero", lambda _: "/dev/zero", "is a character device, not a regular file"),
    ("directory", lambda where: str(where), "is a directory, not a regular file"),
]


def _check(done: subprocess.CompletedProcess[str], path: str, expected: str) -> None:
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.count("\n") == 1, done.stderr[-2000:]
    assert path in done.stderr and expected in done.stderr, done.stderr


@pytest.mark.parametrize(("name", "make", "expected"), [
    *HOSTILE,
    ("one 100 MiB line", _sparse(100 << 20), "line 1 is longer than 1 MiB, the limit for a "
     "server log"),
    ("9 million empty lines", _text("\n" * 9_000_000), "more than 8,000,000 lines"),
], ids=lambda v: v if isinstance(v, str) and len(v) < 30 else "")
def test_diagnose_log_refuses_hostile_files(
    tmp_path: Path, name: str, make: Callable[[Path], str], expected: str
) -> None:
    path = make(tmp_path)
    _check(_plateau("diagnose", "--log", path, cwd=tmp_path), path, expected)


@pytest.mark.parametrize(("name", "make", "expected"), [
    *HOSTILE,
    ("nested JSONL", _text(NESTED), "nested deeper than"),
    ("nested sweep JSON", _text('{"steps": ' + NESTED), "nested deeper than"),
], ids=lambda v: v if isinstance(v, str) and len(v) < 30 else "")
def test_diagnose_bench_refuses_hostile_files(
    tmp_path: Path, name: str, make: Callable[[Path], str], expected: str
) -> None:
    path = make(tmp_path)
    done = _plateau("diagnose", "--log", str(REAL_LOG), "--bench", path, cwd=tmp_path)
    _check(done, path, expected)


ROW = {"timestamp": 0, "input_length": 8, "output_length": 4, "hash_ids": [1]}


@pytest.mark.parametrize(("name", "make", "expected"), [
    *HOSTILE,
    ("one 32 MiB line", _sparse(32 << 20), "line 1 is longer than 1 MiB, the limit for a trace"),
    ("nested JSON", _text(NESTED), ":1: not a Mooncake trace line"),
    ("no timestamp", _text('{"input_length": 3}\n'), ":1: not a Mooncake trace line"),
    ("not JSON", _text(json.dumps(ROW) + "\n{\n"), ":2: not a Mooncake trace line"),
    ("infinite length", _text('{"timestamp": 0, "input_length": Infinity}\n'), ":1: not a"),
    ("a 10^12-token prompt", _text(json.dumps({**ROW, "input_length": 10**12})),
     "input_length and output_length must be 1..1,048,576"),
    ("NaN timestamp", _text('{"timestamp": NaN, "input_length": 3}\n'), "finite"),
    ("empty", _text("\n\n"), "no requests in the trace"),
], ids=lambda v: v if isinstance(v, str) and len(v) < 30 else "")
def test_sweep_trace_is_refused_before_anything_starts(
    tmp_path: Path, name: str, make: Callable[[Path], str], expected: str
) -> None:
    path = make(tmp_path)
    done = _plateau("sweep", "--demo", "--trace", path, "--max-concurrency", "2",
                    cwd=tmp_path)
    _check(done, path, expected)
    assert done.stderr.startswith("plateau: --trace: ")
    assert done.stdout == "" and not (tmp_path / "runs.db").exists()  # nothing started


def test_the_limits_are_the_ones_the_errors_name() -> None:
    # The tests above write files just past these; a change of limit is a change here too.
    assert (SERVER_LOG.max_bytes, SERVER_LOG.max_lines, SERVER_LOG.max_line_chars) == (
        512 << 20, 8_000_000, 1 << 20)
    assert (TRACE_FILE.max_bytes, TRACE_FILE.max_line_chars) == (64 << 20, 1 << 20)
    assert BENCH_FILE.max_bytes == 256 << 20
