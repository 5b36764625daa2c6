"""`plateau logscan` and the scanner over the realistic two-launch sample log."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from console.cli import main
from console.logs.assembler import parse_lines
from console.logs.scan import LogScanner, ScanReport
from tests.support.logs_fixtures import SAMPLE_LOG, sample_events


def scan() -> ScanReport:
    scanner = LogScanner("sample")
    scanner.feed(sample_events())
    return scanner.report()


def test_notable_events_with_counts_and_causes() -> None:
    report = scan()
    notable = {n.id: n for n in report.notable}
    assert notable["moe-default-config"].count == 2  # once per TP rank
    assert notable["kv-pool-full-retract"].count == 1
    assert notable["cuda-oom"].example.startswith("torch.OutOfMemoryError: CUDA out of memory")
    assert notable["server-ready"].count == 2
    assert report.notable[0].severity == "error"  # most severe first
    assert report.lines == 116


def test_launches_and_startup_phases() -> None:
    first, second = scan().launches
    assert (first.outcome, first.fatal) == ("failed", "scheduler-exception")
    assert second.outcome == "stopped"
    phases = {p.name: p for p in first.phases}
    assert phases["load weights"].seconds == 14.87 and phases["load weights"].source == "elapsed"
    assert phases["CUDA graph capture"].seconds == pytest.approx(15.89)
    assert phases["total"].seconds == 42.0
    assert first.engine_timings["tokenizer_e2e"] == 39.06
    # The server's kv_cache_allocation=0.88, not 05:20:21 -> 05:20:23 (issue 26.11).
    assert phases["KV cache allocation"].seconds == 0.88
    assert phases["KV cache allocation"].source == "elapsed"
    ms = {p.name: p.seconds for p in second.phases}
    assert ms["warmup"] == pytest.approx(2.229)  # millisecond timestamps are used
    assert second.startup_seconds == pytest.approx(40.256)


def test_batch_summary() -> None:
    batches = scan().batches
    assert (batches.decode_lines, batches.prefill_lines) == (22, 8)
    assert batches.peak_gen_throughput == 5803.77 and batches.peak_gen_line == 66
    assert (batches.max_running_reqs, batches.max_queue_reqs) == (300, 40)
    assert batches.max_token_usage == 0.98
    [off] = batches.cuda_graph_off
    assert (off.start_line, off.end_line, off.decode_lines) == (58, 61, 4)


def test_logscan_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["logscan", str(SAMPLE_LOG)]) == 0
    out = capsys.readouterr().out
    assert "x2    Untuned MoE kernel config" in out
    assert "Launch 1 (line 3, 2026-02-19 05:20:01): failed (scheduler-exception)" in out
    assert "peak gen throughput   5,803.77 tok/s (line 66" in out
    assert "lines 58-61" in out


def test_logscan_json_from_stdin() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "console.cli", "logscan", "-", "--json"],
        input=SAMPLE_LOG.read_bytes() + b"\xff\xfe garbage \x1b[2J\n",
        capture_output=True, check=False, cwd=Path(__file__).resolve().parent.parent,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["source"] == "<stdin>" and report["lines"] == 117
    assert report["batches"]["max_running_reqs"] == 300


def test_logscan_missing_file_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["logscan", str(tmp_path / "nope.log")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such file" in err
    assert main(["logscan", str(tmp_path)]) == 2


def _launch_count(lines: list[str]) -> int:
    scanner = LogScanner("t")
    scanner.feed(parse_lines(lines))
    return len(scanner.report().launches)


def test_a_warning_before_the_argument_line_is_the_same_launch() -> None:
    """SGLang's ServerArgs checks log (timestamped) warnings before `server_args=`: they
    open no launch of their own (issue 19 item 6: logscan counted one launch too many)."""
    lines = SAMPLE_LOG.read_text("utf-8").splitlines()
    warning = "[2026-02-19 05:20:00] Attention backend not set. Use fa3 backend by default."
    scanner = LogScanner("t")
    scanner.feed(parse_lines([warning, *lines]))
    first, second = scanner.report().launches
    assert first.start_line == 1 and first.outcome == "failed"
    assert second.outcome == "stopped"


def test_a_log_that_begins_mid_launch_still_counts_that_launch() -> None:
    """A tail of a serving launch (batch lines) before a new `server_args=` is a launch."""
    tail = ["[2026-02-19 05:18:59 TP0] Cache flushed successfully!",
            "[2026-02-19 05:19:00 TP0] Decode batch, #running-req: 3, #token: 900, token usage: "
            "0.01, cuda graph: True, gen throughput (token/s): 120.00, #queue-req: 0"]
    args = "[2026-02-19 05:20:01] server_args={'model_path': '/models/m'}"
    assert _launch_count([*tail, args]) == 2
    assert _launch_count(["[2026-02-19 05:19:00] some warning", args]) == 1
