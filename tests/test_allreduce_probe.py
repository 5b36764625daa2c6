"""The all-reduce probe: shipped to a host and run as an argv list within a time bound, its
output read as untrusted JSON. On this machine (no torch, no GPU) it says what it cannot
measure and measures the message sizes; a GPU's figures are the lead's H200 run
(tests/bench/allreduce/one_gpu.py)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from console.host.local import LocalTransport
from console.jobs.allreduce import MAX_OUTPUT, ProbeReport, parse_report, probe_summary, run_probe
from console.jobs.layout_plan import Facts, Shape, collective_s


def test_probe_without_torch_says_so_and_sizes_the_messages() -> None:
    async def go() -> ProbeReport:
        transport = LocalTransport("probe")
        try:
            return await run_probe(transport, sys.executable, 7168, [16, 64], seconds=20)
        finally:
            await transport.close()

    report = asyncio.run(go())
    assert not report.error
    assert [m["bytes"] for m in report.messages] == [7168 * 16 * 2, 7168 * 64 * 2]
    assert any("no torch" in c or "no CUDA GPU" in c for c in report.cannot)
    assert report.measured_us(7168 * 64 * 2) == {}
    assert any("estimated from priors" in line for line in probe_summary(report))


def test_untrusted_output_is_refused_in_one_line() -> None:
    bad = parse_report('{"hidden": 1, "dtype": "bfloat16", "allreduce": [{"ranks": 2, '
                       '"rows": [{"ranks": 2, "bytes": 8, "nccl_graph_us": NaN}]}]}', 1,
                       "bfloat16")
    assert bad.error.startswith("unreadable output") and bad.allreduce == []
    assert parse_report("x" * (MAX_OUTPUT + 1), 1, "bfloat16").error
    assert parse_report("Traceback\n", 1, "bfloat16").error
    escaped = parse_report(json.dumps({"hidden": 1, "dtype": "bfloat16",
                                       "cannot": ["\x1b[31mred\x1b[0m [b]x[/b]"]}), 1,
                           "bfloat16")
    assert "\x1b" not in escaped.cannot[0]


def test_measured_figures_replace_the_priors() -> None:
    good = parse_report(json.dumps({
        "hidden": 7168, "dtype": "bfloat16",
        "allreduce": [{"ranks": 8, "rows": [
            {"ranks": 8, "bytes": 229376, "nccl_graph_us": 30.0},
            {"ranks": 8, "bytes": 917504, "nccl_graph_us": 60.0}]}]}), 7168, "bfloat16")
    measured = good.measured_us(917504)
    assert measured == {8: 60.0}
    shape = Shape(tp=8)
    with_probe = collective_s(shape, Facts(nvlink=False, num_layers=10, measured_us=measured))
    assert with_probe == pytest.approx(2 * 10 * 60e-6)
    assert collective_s(shape, Facts(nvlink=False, num_layers=10)) != with_probe


def test_the_h200s_own_output_reads_as_one_gpu_that_cannot_measure_an_all_reduce() -> None:
    # The probe's output on the device's H200 (tests/bench/allreduce/one_gpu.py, one GPU): its
    # topology matrix is nvidia-smi's raw text, escapes included; none of it may reach a line.
    raw = (Path(__file__).parent / "data" / "allreduce" / "h200-one-gpu.json").read_text()
    assert "\\u001b" in raw  # JSON-escaped ESC
    report = parse_report(raw, 7168, "bfloat16")
    assert not report.error and report.nccl and report.torch
    assert [m["bytes"] for m in report.messages] == [7168 * b * 2 for b in (1, 16, 64, 128)]
    assert report.measured_us(917504) == {}  # one GPU: no all-reduce over several
    lines = probe_summary(report)
    assert sum("1 GPU(s) visible" in line for line in lines) == 3
    assert lines[-1] == "all-reduce costs: estimated from priors over the step times"
    assert not any("\x1b" in line or "GPU0" in line for line in lines)
