"""The log grammar on real lines (issue 37 item 5): every reader (`plateau logscan`, `plateau
diagnose --log`, the console's `--log` view) counts a file's lines and batch lines the same
way, tqdm capture bars are read as one size of a counted list, damaged prefixes are read, and
startup facts SGLang prints are reported.

The corpus-wide checks iterate tests/data/logs/real/'s sidecars, so new files are held to them.
The damage tests put the damage the issue quotes (text before the bracket, a first line cut in
its date, `\\r` redraws) on real lines of the corpus; the lines themselves are as published.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from console.cli import main
from console.commands.logscan import format_report, scan_path
from console.diagnose.evidence import startup_facts
from console.diagnose.log_diagnosis import diagnose_log, open_log
from console.logs.assembler import parse_lines
from console.logs.models import Severity
from console.session.log_file import read_log_file
from console.sglang.startup import CaptureSizes, parse_startup

REAL = Path(__file__).parent / "data" / "logs" / "real"
LOGS = sorted(REAL.glob("*.log"))


def _truth(log: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(log.with_suffix(".truth.json").read_text("utf-8"))
    return data


def _counts_everywhere(path: Path) -> tuple[tuple[int, int, int], ...]:
    """(lines, Decode lines, Prefill lines) as logscan, diagnose --log and the console read
    the file."""
    scan = scan_path(str(path))
    diag = diagnose_log(open_log(str(path)), path=str(path))
    console = read_log_file("log", str(path)).diagnosis
    shown = sum(len(event.lines) for batch in read_log_file("log", str(path)).events
                for event in getattr(batch, "events", ()))
    return ((scan.lines, scan.batches.decode_lines, scan.batches.prefill_lines),
            (diag.lines, diag.decode_lines, diag.prefill_lines),
            (console.lines, console.decode_lines, console.prefill_lines),
            (shown, console.decode_lines, console.prefill_lines))


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.stem)
def test_every_reader_counts_a_corpus_file_as_its_sidecar_does(log: Path) -> None:
    truth = _truth(log)
    expected = (truth["line_count"], truth["decode_batch_lines"], truth["prefill_batch_lines"])
    assert set(_counts_everywhere(log)) == {expected}


def test_a_batch_line_without_the_rows_fields_is_counted_by_both(tmp_path: Path) -> None:
    # sglang-jax's `Prefill batch. #bid: 1, #cache_miss: 2` has no #running-req: logscan
    # counted it, diagnose dropped it (the 5 damaged Prefill lines read as 0).
    log = REAL / "sglang-jax564-tpu-decode-cache-miss.log"
    assert "Prefill batch. #bid: 1, #cache_miss: 2" in log.read_text()
    diag = diagnose_log(open_log(str(log)))
    assert (diag.decode_lines, diag.prefill_lines) == (12, 2)


def test_redrawn_lines_are_one_line_each_everywhere(tmp_path: Path) -> None:
    # tqdm writes its bar with `\r` between redraws: the corpus copy of pr17392 has them as
    # lines; as the server's file held them they are one line of 12 redraws.
    log = REAL / "pr17392-dp-ep-old-capture-tqdm.log"
    lines = log.read_text(encoding="utf-8").split("\n")
    bars = [i for i, line in enumerate(lines) if line.startswith("Capturing batches")]
    redrawn = [*lines[:bars[0]], "\r".join(lines[bars[0]:bars[-1] + 1]), *lines[bars[-1] + 1:]]
    path = tmp_path / "redrawn.log"
    path.write_bytes("\r\n".join(redrawn).encode())  # and Windows line ends
    expected = len(lines) - 1 - (len(bars) - 1)
    counts = _counts_everywhere(path)
    assert {c[0] for c in counts} == {expected}, counts
    # The line a terminal shows is the last redraw: the capture's end, size 1 of 6.
    assert ("  decode CUDA graphs     6 sizes (tqdm count; this log shows bs 1 of them, "
            "captured largest first: the largest not in this log)") in format_report(
        scan_path(str(path))).split("\n")


# -- tqdm capture bars ------------------------------------------------------------------------


def test_a_last_capture_bar_is_one_size_of_a_counted_list(tmp_path: Path) -> None:
    # The issue: `Capturing batches (bs=1 avail_mem=11.18 GB): 100%|…| 36/36` was read as the
    # whole list ("bs 1..1 (1 sizes)"). pr17392's own last bar, alone after its begin line:
    log = REAL / "pr17392-dp-ep-old-capture-tqdm.log"
    lines = log.read_text(encoding="utf-8").splitlines()
    last = lines[-1]
    assert last.startswith("Capturing batches (bs=1 avail_mem=10.17 GB): 100%|") and "6/6" in last
    path = tmp_path / "last-bar.log"
    path.write_text(lines[0] + "\n" + last + "\n", encoding="utf-8")
    report = format_report(scan_path(str(path)))
    assert ("  decode CUDA graphs     6 sizes (tqdm count; this log shows bs 1 of them, "
            "captured largest first: the largest not in this log)") in report.split("\n")
    assert "bs 1..1" not in report
    # The diagnosis gets no ceiling of 1 from it.
    facts = startup_facts([lines[0], last])
    assert facts.capture_bs is None or facts.capture_bs != [1]
    assert facts.cuda_graph_max_bs_decode is None


def test_the_first_bar_names_the_largest_size() -> None:
    lines = (REAL / "pr17392-dp-ep-old-capture-tqdm.log").read_text("utf-8").splitlines()
    bars = [parse_startup(line) for line in lines if line.startswith("Capturing batches")]
    sizes = CaptureSizes()
    first = bars[0]
    assert first is not None and sizes.add(first)
    assert (sizes.sizes, sizes.ceiling, sizes.count) == (None, 16, 6)
    for bar in bars[1:]:
        assert bar is not None and sizes.add(bar)
    assert (sizes.sizes, sizes.ceiling, sizes.count) == ([1, 2, 4, 8, 12, 16], 16, 6)
    assert startup_facts(lines).capture_bs == [1, 2, 4, 8, 12, 16]


# -- damaged prefixes -------------------------------------------------------------------------


def _damaged(tmp_path: Path, damage: str) -> tuple[Path, list[str]]:
    """pr13023's real decode lines with the first one damaged as `damage` says."""
    lines = (REAL / "pr13023-graph-false-above-ceiling.log").read_text("utf-8").splitlines()
    first = lines[0]
    assert first.startswith("[2025-") and "Decode batch" in first
    if damage == "text-before":
        lines[0] = "@c:\\Users\\op\\log.txt " + first  # the issue's `@c:\…\log.txt [...]`
    else:
        lines[0] = first[2:]  # `025-...] Decode batch` as the cut first bracket
    path = tmp_path / f"{damage}.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, lines


@pytest.mark.parametrize("damage", ["text-before", "cut-date"])
def test_a_damaged_prefix_is_read_not_dropped(tmp_path: Path, damage: str) -> None:
    path, lines = _damaged(tmp_path, damage)
    assert set(_counts_everywhere(path)) == {(8, 8, 0)}
    rates = [float(line.split("gen throughput (token/s): ")[1].split(",")[0]) for line in lines]
    scan = scan_path(str(path))
    assert scan.batches.peak_gen_throughput == max(rates)
    assert scan.batches.max_running_reqs == max(
        int(line.split("#running-req: ")[1].split(",")[0]) for line in lines)
    event = parse_lines(lines[:1])[0]
    assert event.message.startswith("Decode batch") and event.severity == Severity.DEBUG
    assert event.timestamp == (lines[0][lines[0].index("[") + 1:][:19]
                               if damage == "text-before" else None)


# -- startup facts ------------------------------------------------------------------------------


def test_the_capture_time_sglang_printed_is_reported(tmp_path: Path) -> None:
    # The line (6.5 min of capture on a 2-node H800 launch), as quoted, without the
    # capture's begin line (the excerpt starts there).
    path = tmp_path / "capture-end.log"
    path.write_text("Capture cuda graph end. Time elapsed: 391.00 s\n", encoding="utf-8")
    report = format_report(scan_path(str(path)))
    assert "  CUDA graph capture       391.00 s   line 1  (SGLang's elapsed)" in report


@pytest.mark.parametrize("log", [log for log in LOGS
                                 if "Capture cuda graph end. Time elapsed:" in log.read_text()],
                         ids=lambda p: p.stem)
def test_every_corpus_capture_time_is_reported(log: Path) -> None:
    scan = scan_path(str(log))
    phases = [p for launch in scan.launches for p in launch.phases
              if p.name == "CUDA graph capture"]
    assert phases and all(p.source == "elapsed" for p in phases)


def test_the_kv_allocation_is_reported(tmp_path: Path) -> None:
    # The line as quoted (an excerpt with no scheduler sizing line after it).
    path = tmp_path / "kv.log"
    path.write_text("KV Cache is allocated. #tokens: 834615\n", encoding="utf-8")
    scan = scan_path(str(path))
    assert scan.launches[0].kv_allocated_tokens == 834615
    assert "  KV cache allocated     834615 tokens (KV Cache is allocated)" in format_report(
        scan).split("\n")
    # agentivium prints it and the sizing line, the same figure: said once.
    log = REAL / "agentivium-awq7b-graphs-disabled-2026-09.log"
    scan = scan_path(str(log))
    assert scan.launches[0].kv_allocated_tokens == scan.launches[0].max_total_num_tokens == 133052
    report = format_report(scan).split("\n")
    assert "  KV cache tokens        133052" in report
    assert not [line for line in report if "KV cache allocated" in line]


def test_a_library_info_line_is_not_a_warning() -> None:
    # flashinfer's JIT logger, as printed in published SGLang logs: INFO, however worded
    # ("not found" read it as a warning).
    lines = ["2025-12-20 04:20:03,864 - INFO - flashinfer.jit: Prebuilt kernels not found, "
             "using JIT backend",
             "2025-06-08 21:06:35,733 - INFO - flashinfer.jit: Loading JIT ops: cascade"]
    events = parse_lines(lines)
    assert [e.severity for e in events] == [Severity.INFO, Severity.INFO]
    assert events[0].message == "flashinfer.jit: Prebuilt kernels not found, using JIT backend"


# -- not a server log ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["junk", "empty", "binary", "one-giant-line"])
def test_a_file_that_is_not_a_server_log_is_one_line_and_a_non_zero_exit(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str) -> None:
    path = tmp_path / f"{kind}.log"
    if kind == "junk":
        path.write_text("hello\nthis is a shopping list, not a log\n", encoding="utf-8")
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "binary":
        path.write_bytes(bytes(range(256)) * 4000)
    else:
        path.write_bytes(b"x" * (3 << 20))  # 3 MiB, no newline: over a log line's limit
    # A line past the limit is refused by the bounded reader (console/inputfile.py) before
    # it is read whole; the rest are read and found to hold no server line.
    said = ("longer than 1 MiB|not an SGLang server log" if kind == "one-giant-line"
            else "not an SGLang server log")
    for argv in (["diagnose", "--log", str(path)], ["diagnose", "--log", str(path), "--json"],
                 ["--log", str(path)]):
        assert main(argv) == 2
        out, err = capsys.readouterr()
        assert out == ""
        assert err.count("\n") == 1 and re.search(said, err), err
        assert err.startswith("plateau: ") and str(path) in err


def test_a_crash_only_log_is_a_server_log() -> None:
    # gh4547 is a traceback and nothing else: no prefix, batch or startup line.
    log = REAL / "gh4547-a100-runtimeerror-cuda-oom.log"
    assert diagnose_log(open_log(str(log))).crash is not None


def test_the_text_lists_what_the_log_could_not_show(capsys: pytest.CaptureFixture[str]) -> None:
    # A named cause (eager-decode) and the others the log cannot show, as --json has them.
    log = REAL / "mineru3470-rtx5090-eager-decode-v0.4.10.log"
    assert main(["diagnose", "--log", str(log), "--json"]) == 0
    not_seen = json.loads(capsys.readouterr().out)["diagnosis"]["not_seen"]
    assert main(["diagnose", "--log", str(log)]) == 0
    text = capsys.readouterr().out.split("\n")
    assert "why #1: eager-decode" in "\n".join(text) and "kv-cache-full" in not_seen
    listed = {line.split()[0]: line.split("; lacked: ")[1] for line in text
              if line.startswith("  ") and " not seen; lacked: " in line}
    assert listed == {cause: "; ".join(items) for cause, items in not_seen.items()}
