"""A crash or a failed launch is the first finding everywhere (issue 37 item 4): `plateau
logscan` and `plateau diagnose --log` (text and JSON) name the same crash at the same line,
the console's Why view leads with it and the Events view lists it as an error.

Crash logs are the real ones in tests/data/logs/real/ that CORPUS_SCHEMA calls crash files
(`oom: true`, or an event of kind `crash` or `oom`); every other file must name no crash (a
test runner's failed assertion is not the server dying). New corpus files are picked up by
iterating the sidecars.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from textual.app import App, ComposeResult

from console.app.launch import log_app
from console.cli import main
from console.commands.logscan import format_report, scan_path
from console.diagnose.log_diagnosis import diagnose_log, log_diagnosis_lines, open_log
from console.logs.assembler import parse_lines
from console.logs.crash_finding import CrashWatch
from tests.support.snapshot import SnapCompare
from widgets.event_log import EventLogTable
from widgets.why_view import WhyView, why_text

REAL = Path(__file__).parent / "data" / "logs" / "real"
CRASH_KINDS = {"crash", "oom"}


def _truth(log: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(log.with_suffix(".truth.json").read_text("utf-8"))
    return data


def _is_crash(log: Path) -> bool:
    """CORPUS_SCHEMA's crash file: `oom: true`, or an event of kind `crash` or `oom`."""
    truth = _truth(log)
    return bool(truth["oom"]) or any(e["kind"] in CRASH_KINDS for e in truth["events"])


LOGS = sorted(REAL.glob("*.log"))
CRASHES = [log for log in LOGS if _is_crash(log)]
HEALTHY = [log for log in LOGS if not _is_crash(log)]
SNAPSHOTTED = ["dgx-spark-laguna-int4-dflash-gb10-v0.5.16", "gh1087-v0.2-controller-oom-traceback",
               "gh1693-v0.3-nccl-watchdog-timeout", "gh4547-a100-runtimeerror-cuda-oom",
               "ktransformers1969-4x3090-tp2-startup-traceback"]


def _file_lines(log: Path) -> list[str]:
    text = log.read_text(encoding="utf-8")
    return (text[:-1] if text.endswith("\n") else text).split("\n")


def test_the_corpus_holds_crash_logs_of_each_kind() -> None:
    kinds = {e["kind"] for log in CRASHES for e in _truth(log)["events"]}
    assert len(CRASHES) >= 5 and {"oom", "nccl_error", "crash"} <= kinds
    assert {log.stem for log in CRASHES} >= set(SNAPSHOTTED)


@pytest.mark.parametrize("log", CRASHES, ids=lambda p: p.stem)
def test_logscan_and_diagnose_name_the_same_crash_first(log: Path) -> None:
    truth = _truth(log)
    scan = scan_path(str(log))
    result = diagnose_log(open_log(str(log)), path=str(log))
    assert scan.crash is not None and result.crash is not None
    assert (scan.crash.kind, scan.crash.line, scan.crash.text) == (
        result.crash.kind, result.crash.line, result.crash.text)
    # The line it names holds the text it quotes, as printed.
    assert result.crash.text in _file_lines(log)[result.crash.line - 1]
    # Its kind is the sidecar's: an OOM is an OOM, an NCCL failure an NCCL failure.
    kinds = {e["kind"] for e in truth["events"]}
    assert (result.crash.kind == "oom") == bool(truth["oom"])
    assert (result.crash.kind == "nccl") == ("nccl_error" in kinds)
    # First in the text (after the line that says what was read) and in the JSON.
    text = log_diagnosis_lines(result)
    assert text[1] == f"crash: {result.crash.sentence()}"
    assert format_report(scan).split("\n")[1].startswith(f"CRASH: {scan.crash.title} (line ")


@pytest.mark.parametrize("log", HEALTHY, ids=lambda p: p.stem)
def test_a_log_without_a_crash_names_none(log: Path) -> None:
    assert scan_path(str(log)).crash is None
    assert diagnose_log(open_log(str(log)), path=str(log)).crash is None


def test_the_cli_json_leads_with_the_crash(capsys: pytest.CaptureFixture[str]) -> None:
    log = REAL / "gh4547-a100-runtimeerror-cuda-oom.log"
    assert main(["diagnose", "--log", str(log), "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert list(body)[:2] == ["log", "crash"]
    assert body["crash"] == {"kind": "oom", "title": "GPU out of memory", "line": 14,
                             "timestamp": None,
                             "text": "RuntimeError: CUDA error: out of memory"}


def test_a_test_runners_traceback_is_not_a_crash() -> None:
    # The Ascend CI log ends in unittest asserting a throughput threshold (sidecar: a
    # `traceback` event, no crash): the server served every request.
    log = REAL / "ascend-qwen3-32b-tp8-eagle3-benchfail.log"
    assert "AssertionError" in log.read_text()
    assert diagnose_log(open_log(str(log)), path=str(log)).crash is None


def test_a_cut_server_traceback_is_still_a_crash() -> None:
    # gh1087: the excerpt ends inside the traceback (no exception line): the server's frames
    # and the line that announced it say the controller died.
    log = REAL / "gh1087-v0.2-controller-oom-traceback.log"
    crash = diagnose_log(open_log(str(log)), path=str(log)).crash
    assert crash is not None and (crash.kind, crash.line) == ("exception", 1)
    assert crash.text == "Exception in ControllerSingle:"


def test_the_crash_far_down_a_long_log_is_found() -> None:
    # Thousands of batch lines before the crash: the fast reader keeps the crash's lines.
    log = REAL / "gh4547-a100-runtimeerror-cuda-oom.log"
    batch = ("[2025-03-18 10:00:00 TP0] Decode batch. #running-req: 8, #token: 900, token "
             "usage: 0.01, cuda graph: True, gen throughput (token/s): 700.00, #queue-req: 0\n")
    text = batch * 5000 + log.read_text()
    crash = diagnose_log([text]).crash
    assert crash is not None and (crash.kind, crash.line) == ("oom", 5014)
    watch = CrashWatch()
    watch.feed(parse_lines(text.splitlines()))
    assert watch.finding == crash


# -- the console ------------------------------------------------------------------------------


class WhyApp(App[None]):
    def __init__(self, log: Path) -> None:
        super().__init__()
        self.result = diagnose_log(open_log(str(log)), path=log.name)

    def compose(self) -> ComposeResult:
        yield WhyView("", id="why-view")

    def on_mount(self) -> None:
        result = self.result
        note = log_diagnosis_lines(result)[0]
        crash = result.crash.sentence() if result.crash is not None else ""
        self.query_one(WhyView).show(result.diagnosis, note, result.effective, crash)


@pytest.mark.parametrize("slug", SNAPSHOTTED)
def test_why_view_on_a_crash_log_snapshot(snap_compare: SnapCompare, slug: str) -> None:
    # The top of the view only: the crash line, what was read, the knee (the causes below
    # are another change's; tests above check the whole text starts with the crash).
    assert snap_compare(WhyApp(REAL / f"{slug}.log"), terminal_size=(120, 8))


@pytest.mark.parametrize("log", CRASHES, ids=lambda p: p.stem)
def test_the_why_text_leads_with_the_crash(log: Path) -> None:
    result = diagnose_log(open_log(str(log)), path=str(log))
    assert result.crash is not None
    plain = why_text(result.diagnosis, "note", result.effective, result.crash.sentence()).plain
    assert plain.startswith(f"CRASH: {result.crash.sentence()}\n")


@pytest.mark.slow
async def test_the_console_shows_the_crash_in_why_and_events() -> None:
    log = REAL / "gh4547-a100-runtimeerror-cuda-oom.log"
    app, session = log_app(str(log))
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        await pilot.press("W")
        plain = ""
        for _ in range(40):
            await pilot.pause(0.05)
            views = app.screen.query("#why-view")
            if views and views.first(WhyView).plain:
                plain = views.first(WhyView).plain
                break
        assert plain.startswith("CRASH: GPU out of memory at line 14: RuntimeError: CUDA error: "
                                "out of memory\n")
        await pilot.press("escape", "e")
        await pilot.pause(0.1)
        table = app.screen.query_one(EventLogTable)
        rows = [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]
    errors = [row for row in rows if row[3] == "error"]
    assert [row[4] for row in errors] == [
        "crash: GPU out of memory at line 14: RuntimeError: CUDA error: out of memory"]
    await session.close()


def test_logscan_text_of_a_healthy_log_has_no_crash_line() -> None:
    scan = scan_path(str(REAL / "pr13023-graph-false-above-ceiling.log"))
    assert "CRASH" not in format_report(scan)
    assert io.StringIO(format_report(scan)).readline().startswith(str(REAL))


# sgl-project/sglang#6033 (H200, 0.4.6.post2): a capture's last words, as published (the
# trailing spaces are the issue's).
CAPTURE_FAILED = (
    "Exception: Capture cuda graph failed: RuntimeError: Cannot call "
    "CUDAGeneratorImpl::current_seed during CUDA graph capture. \n"
    "If you need this call to be captured, please file an issue. \n"
    "Current cudaStreamCaptureStatus: cudaStreamCaptureStatusActive\n")


def test_no_graph_size_is_effective_after_a_failed_capture() -> None:
    # tianyang's log asks cuda_graph_max_bs=8 and ends inside the capture of bs [1] (its
    # last line: TP1's `Capture cuda graph begin`); the capture then fails.
    log = REAL / "tianyang-qwen3-14b-tp2-offload-startup-mrr1.log"
    text = log.read_text(encoding="utf-8")
    before = diagnose_log([text])
    assert "--cuda-graph-max-bs-decode 8 \u2192 1" in before.effective
    after = diagnose_log([text + CAPTURE_FAILED])
    assert after.crash is not None and after.crash.kind == "capture"
    assert after.crash.line == text.count("\n") + 1
    assert not [line for line in after.effective if "cuda-graph" in line]
    assert [line for line in after.effective if "cuda-graph" not in line] == [
        line for line in before.effective if "cuda-graph" not in line]
    lines = log_diagnosis_lines(after)
    assert lines[1] == ("crash: CUDA-graph capture failed at startup at line 49: Exception: "
                        "Capture cuda graph failed: RuntimeError: Cannot call "
                        "CUDAGeneratorImpl::current_seed during CUDA graph capture.")
    assert not [line for line in lines if line.startswith("effective: --cuda-graph")]


def test_logscan_says_the_capture_sizes_are_not_in_effect(tmp_path: Path) -> None:
    log = REAL / "tianyang-qwen3-14b-tp2-offload-startup-mrr1.log"
    path = tmp_path / "capture-failed.log"
    path.write_text(log.read_text(encoding="utf-8") + CAPTURE_FAILED, encoding="utf-8")
    report = format_report(scan_path(str(path)))
    assert "  decode CUDA graphs     bs 1..1 tried; capture failed (line 49): none in effect" \
        in report.split("\n")
    assert "bs 1..1 (1 sizes" not in report


def test_a_cut_traceback_inside_the_capture_window_is_a_capture_failure() -> None:
    # tianyang's log ends inside its capture (TP1's `Capture cuda graph begin` is its last
    # line); then a scheduler traceback cut before its exception, as ktransformers#1969
    # printed one (lines 2-5 of that file). In the capture's window: the capture failed.
    capture = (REAL / "tianyang-qwen3-14b-tp2-offload-startup-mrr1.log").read_text("utf-8")
    cut = _file_lines(REAL / "ktransformers1969-4x3090-tp2-startup-traceback.log")[1:5]
    assert cut[0].endswith("Scheduler hit an exception: Traceback (most recent call last):")
    text = capture + "\n".join(cut) + "\n"
    crash = diagnose_log([text]).crash
    assert crash is not None and (crash.kind, crash.line) == ("capture", 49)
    watch = CrashWatch()
    watch.feed(parse_lines(text.splitlines()))
    assert watch.finding == crash
    # Far from any capture (the same lines alone) it is the scheduler failing.
    alone = diagnose_log(["\n".join(cut) + "\n"]).crash
    assert alone is not None and alone.kind == "fatal"


@pytest.mark.parametrize("log", CRASHES, ids=lambda p: p.stem)
def test_a_live_hosts_log_crash_is_an_error_in_the_event_log_once(log: Path) -> None:
    # The followed log's events as the session gets them (the same assembler), twice: the
    # crash is said once, as the file's diagnosis words it (without a file line: a live log
    # has none to give).
    from console.session.service import HostSession
    from tests.support.app_fixtures import app_config

    loaded = app_config()
    session = HostSession(loaded.config.hosts[0], loaded.config)
    events = parse_lines(_file_lines(log))
    session._log_crashes(events)
    session._log_crashes(events)
    crash = diagnose_log(open_log(str(log))).crash
    assert crash is not None
    shown = [(r.source, r.level, r.message) for r in session.state.events if r.source == "log"]
    assert shown == [("log", "error", f"crash: {crash.title}: {crash.text}")]
