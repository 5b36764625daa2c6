"""The real-log corpus (tests/data/logs/real/) keeps to CORPUS_SCHEMA.

Each excerpt has a complete sidecar whose counted facts match plain string counts of the
excerpt, and the corpus as a whole spans what Plateau must read (prefix shapes, vendors,
both CUDA-graph capture wordings). Counts here are plain substring counts, never Plateau's
parser: the sidecar is the reader's truth."""

import json
from pathlib import Path
from typing import Any

import pytest

from console.diagnose.rules import CAUSE_IDS

REAL = Path(__file__).parent / "data" / "logs" / "real"
LOGS = sorted(REAL.glob("*.log"))

SCHEMA_KEYS = {
    "source",
    "source_note",
    "sglang_version",
    "version_evidence",
    "hardware",
    "vendor",
    "parallelism",
    "prefix_shape",
    "line_count",
    "decode_batch_lines",
    "prefill_batch_lines",
    "max_running_req",
    "ranks_with_batch_lines",
    "decode_cuda_graph_false_lines",
    "captured_decode_bs_max",
    "captured_decode_bs",
    "cuda_graph_disabled",
    "max_running_requests",
    "max_running_requests_requested",
    "max_total_num_tokens",
    "server_args_form",
    "capture_wording",
    "events",
    "exception_lines",
    "oom",
    "plateau_causes",
    "abstain",
    "reader_notes",
}
OPTIONAL_KEYS = {"decode_ladder"}
"""Only where the excerpt has both a decode capture list and Decode lines (test_ladder_real)."""
PARALLELISM_KEYS = {"tp", "dp", "ep", "pp", "nodes", "dp_attention", "pd", "speculative"}
EVENT_KINDS = {
    "oom",
    "traceback",
    "kv_full",
    "retract",
    "watchdog",
    "nccl_error",
    "warning",
    "startup_done",
    "crash",
    "other",
}
PREFIX_SHAPES = {"date_time_ranks", "time_ranks", "logging_config", "none", "mixed"}
VENDORS = {"nvidia", "amd", "ascend", "other"}
OLD_CAPTURE = "Capture cuda graph begin. This can take up to several minutes."
NEW_CAPTURE = "CUDA graph begin. backend="


def _lines(log: Path) -> list[str]:
    text = log.read_text(encoding="utf-8")
    return text[:-1].split("\n") if text.endswith("\n") else text.split("\n")


def _truth(log: Path) -> dict[str, Any]:
    sidecar = log.with_suffix(".truth.json")
    assert sidecar.exists(), f"{log.name} has no sidecar"
    data: dict[str, Any] = json.loads(sidecar.read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.stem)
def test_sidecar_has_every_schema_key(log: Path) -> None:
    truth = _truth(log)
    assert SCHEMA_KEYS <= set(truth) <= SCHEMA_KEYS | OPTIONAL_KEYS
    assert set(truth["parallelism"]) == PARALLELISM_KEYS
    assert truth["vendor"] in VENDORS
    assert truth["prefix_shape"] in PREFIX_SHAPES
    assert truth["server_args_form"] in {"dict", "dataclass", None}
    assert truth["capture_wording"] in {"old", "new", None}
    assert set(truth["plateau_causes"]) <= set(CAUSE_IDS)
    assert not (truth["abstain"] and truth["plateau_causes"]), "abstain with causes named"
    for event in truth["events"]:
        assert event["kind"] in EVENT_KINDS
        assert 1 <= event["line"] <= truth["line_count"]


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.stem)
def test_counts_match_plain_string_counts(log: Path) -> None:
    truth, lines = _truth(log), _lines(log)
    decode = [line for line in lines if "Decode batch" in line]
    assert "\r" not in log.read_text(encoding="utf-8")
    assert truth["line_count"] == len(lines)
    assert truth["decode_batch_lines"] == len(decode)
    assert truth["prefill_batch_lines"] == sum("Prefill batch" in line for line in lines)
    if truth["decode_cuda_graph_false_lines"] is not None:
        assert truth["decode_cuda_graph_false_lines"] == sum(
            "cuda graph: False" in line for line in decode
        )
    if truth["max_running_req"] is not None:
        assert any(f"#running-req: {truth['max_running_req']}," in line for line in decode)
    for tag in truth["ranks_with_batch_lines"]:
        assert any(tag in line for line in lines if "batch" in line), tag


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.stem)
def test_exception_lines_and_events_occur_verbatim(log: Path) -> None:
    truth, lines = _truth(log), _lines(log)
    for exc in truth["exception_lines"]:
        assert exc in lines or any(exc in line for line in lines), exc
    if truth["capture_wording"] == "old":
        assert any("Capture cuda graph" in line or "Capturing batches" in line for line in lines)
    if truth["capture_wording"] == "new":
        assert any(NEW_CAPTURE in line for line in lines)


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.stem)
def test_source_is_an_https_url(log: Path) -> None:
    source = _truth(log)["source"]
    assert source.startswith("https://github.com/"), source
    assert " " not in source


def test_corpus_spans_shapes_vendors_and_wordings() -> None:
    truths = [_truth(log) for log in LOGS]
    text = "\n".join(log.read_text(encoding="utf-8") for log in LOGS)
    assert len(LOGS) >= 25
    assert len({t["prefix_shape"] for t in truths}) >= 4
    assert len({t["vendor"] for t in truths}) >= 3
    assert OLD_CAPTURE in text and "Capture target decode CUDA graph begin. backend=full" in text
    assert {"old", "new"} <= {t["capture_wording"] for t in truths}
    assert sorted(p.name for p in REAL.glob("*.truth.json")) == sorted(
        f"{p.stem}.truth.json" for p in LOGS
    )
