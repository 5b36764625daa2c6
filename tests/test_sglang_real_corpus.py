"""Every real SGLang log in tests/data/logs/real/ against its sidecar (`<slug>.truth.json`,
written by a reader, not by this parser; schema in the corpus's INDEX.md): the grammar
(console/sglang/) and the whole-log scan must read what the reader read."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from console.commands.logscan import scan_stream
from console.logs.scan import ScanReport
from console.sglang.batch import is_batch_message, parse_batch
from console.sglang.prefix import parse_prefix

REAL = Path(os.environ.get("PLATEAU_REAL_LOGS", Path(__file__).parent / "data/logs/real"))
SLUGS = sorted(p.name[: -len(".truth.json")] for p in REAL.glob("*.truth.json"))


def _truth(slug: str) -> dict[str, Any]:
    truth: dict[str, Any] = json.loads((REAL / f"{slug}.truth.json").read_text("utf-8"))
    return truth


def _lines(slug: str) -> list[str]:
    return (REAL / f"{slug}.log").read_text("utf-8", errors="replace").splitlines()


def _scan(slug: str) -> ScanReport:
    data = (REAL / f"{slug}.log").read_bytes()
    return scan_stream(io.BytesIO(data), source=slug)


def _batches(slug: str) -> dict[str, Any]:
    """What the grammar reads from the batch lines, line by line."""
    decode = prefill = 0
    running: list[int] = []
    ranks: set[str] = set()
    eager = 0
    cuda_field = False
    for line in _lines(slug):
        prefix = parse_prefix(line)
        if not is_batch_message(prefix.message):
            continue
        stats = parse_batch(prefix.message, timestamp=prefix.timestamp, ranks=prefix.ranks)
        assert stats is not None, line
        if prefix.ranks:
            ranks.add(prefix.ranks)
        if stats.kind == "prefill":
            prefill += 1
            continue
        decode += 1
        if stats.running_reqs is not None:
            running.append(stats.running_reqs)
        if "cuda graph" in stats.fields:
            cuda_field = True
            eager += stats.cuda_graph is False
    return {"decode": decode, "prefill": prefill, "max_running": max(running, default=None),
            "ranks": ranks, "eager": eager if cuda_field else None}


def test_the_corpus_is_here() -> None:
    assert len(SLUGS) >= 25, REAL


@pytest.mark.parametrize("slug", SLUGS)
def test_batch_lines_read_as_the_reader_did(slug: str) -> None:
    truth, got = _truth(slug), _batches(slug)
    assert got["decode"] == truth["decode_batch_lines"]
    assert got["prefill"] == truth["prefill_batch_lines"]
    assert got["max_running"] == truth["max_running_req"]
    assert got["ranks"] == set(truth["ranks_with_batch_lines"])
    assert got["eager"] == truth["decode_cuda_graph_false_lines"]


@pytest.mark.parametrize("slug", SLUGS)
def test_logscan_counts_every_batch_line(slug: str) -> None:
    truth, batches = _truth(slug), _scan(slug).batches
    assert (batches.decode_lines, batches.prefill_lines) == (
        truth["decode_batch_lines"], truth["prefill_batch_lines"])
    if truth["decode_cuda_graph_false_lines"] is not None:
        assert batches.decode_lines_eager == truth["decode_cuda_graph_false_lines"]
    if truth["decode_batch_lines"] and truth["decode_cuda_graph_false_lines"] is None:
        # No `cuda graph:` field: npu/cpu graph labels count, else the state is unknown.
        assert batches.decode_lines_with_graph in (0, truth["decode_batch_lines"])


def _first(report: ScanReport, key: str) -> Any:
    """The first launch's value that is set (an excerpt may start mid-launch)."""
    return next((getattr(launch, key) for launch in report.launches
                 if getattr(launch, key) is not None), None)


@pytest.mark.parametrize("slug", SLUGS)
def test_startup_facts_as_the_reader_found_them(slug: str) -> None:
    truth, report = _truth(slug), _scan(slug)
    sizes = _first(report, "captured_decode_bs")
    assert (max(sizes) if sizes else None) == truth["captured_decode_bs_max"]
    assert _first(report, "max_running_requests") == truth["max_running_requests"]
    assert _first(report, "max_total_num_tokens") == truth["max_total_num_tokens"]
    assert _first(report, "server_args_form") == truth["server_args_form"]
    assert _first(report, "capture_wording") == truth["capture_wording"]
    if truth.get("max_running_requests_requested") is not None:
        assert _first(report, "max_running_requests_requested") == truth[
            "max_running_requests_requested"]


# Where the parser and a sidecar disagree and the log text sides with the parser: the value
# the log supports, and why (reported to the corpus's author, not bent to).
EXCEPTIONS_PER_LOG = {
    # Lines 222-254 hold THREE tracebacks (a retried unittest): two end in the AssertionError,
    # the third in `Exception: retry() exceed maximum number of retries.`; the sidecar lists
    # the AssertionError once (schema: "final line of each traceback").
    "ascend-qwen3-32b-tp8-eagle3-benchfail": [
        "AssertionError: 96.76 not greater than or equal to 108.95913978494625",
        "AssertionError: 96.76 not greater than or equal to 108.95913978494625",
        "Exception: retry() exceed maximum number of retries.",
    ],
}


@pytest.mark.parametrize("slug", SLUGS)
def test_crashes_as_the_reader_found_them(slug: str) -> None:
    truth, report = _truth(slug), _scan(slug)
    assert report.oom == truth["oom"]
    expected = EXCEPTIONS_PER_LOG.get(slug, truth["exception_lines"])
    assert set(truth["exception_lines"]) <= set(expected)
    assert [e.text for e in report.exceptions] == [line[:300] for line in expected]
