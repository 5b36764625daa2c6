"""A trace is replayed at its timestamps, which only an open-loop step does: `sweep --trace`
(and a preset's workload = "trace") without max_concurrency or request_rate is refused, not
run as a concurrency sweep that cycles the trace's rows (128 requests from a 30-row trace,
at no timestamp). The CLI refuses before anything starts; the model refuses a preset too.
(The replay itself: tests/test_bench_open_loop.py, 5 rows -> 5 requests.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.config_models import SweepPreset
from tests.test_config import plateau

ROW = {"timestamp": 0, "input_length": 8, "output_length": 4, "hash_ids": [1]}


def _trace(tmp_path: Path) -> str:
    path = tmp_path / "trace.jsonl"
    path.write_text("".join(json.dumps({**ROW, "timestamp": 100 * i}) + "\n"
                            for i in range(30)))
    return str(path)


@pytest.mark.parametrize("where", [["--demo"], ["--url", "http://127.0.0.1:9"]])
def test_sweep_trace_without_an_open_loop_is_refused_before_anything_starts(
    tmp_path: Path, where: list[str]
) -> None:
    db = tmp_path / "runs.db"
    done = plateau("sweep", *where, "--trace", _trace(tmp_path), "--db", str(db))
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "a trace replays at its timestamps" in done.stderr
    assert "--max-concurrency" in done.stderr and "--request-rate" in done.stderr
    assert done.stdout == "" and not db.exists()


def test_ab_trace_without_an_open_loop_is_refused(tmp_path: Path) -> None:
    done = plateau("ab", "--demo", "--trace", _trace(tmp_path), "--db",
                   str(tmp_path / "runs.db"))
    assert done.returncode == 2 and "a trace replays at its timestamps" in done.stderr


def test_a_trace_preset_needs_a_cap_or_a_rate(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    with pytest.raises(ValueError, match="a trace replays at its timestamps"):
        SweepPreset(workload="trace", trace_file=trace)
    assert SweepPreset(workload="trace", trace_file=trace, max_concurrency=4).max_concurrency
    assert SweepPreset(workload="trace", trace_file=trace, request_rate=[2.0]).request_rate
