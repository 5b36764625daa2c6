"""The client's side of a run, from files the operator already has: SGLang bench_serving's
`--output-file` JSONL (one record per run) or `plateau sweep --json` output.

bench_serving's record holds the run's numbers but no wall-clock time (0.5.23
`sglang/benchmark/serving.py` builds it from `max_concurrency`, `duration`, `completed`, the
throughputs and latency percentiles; tests/data/bench/*.jsonl are real records), so its runs
are matched to a log by the requests the server held, never by time. A sweep's steps carry
`started_at`/`finished_at` (unix seconds), so its steps are windows on the log's clock.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import ValidationError

from console.bench.bench_serving import parse_jsonl, record_to_metrics
from console.bench.models import StepResult
from console.errors import UsageError
from console.inputfile import BENCH_FILE, read_text


@dataclass(frozen=True)
class ClientSide:
    """The client's steps, and whether they carry wall-clock windows."""

    steps: list[StepResult]
    kind: Literal["bench_serving", "sweep"]
    windows: bool
    files: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # records that could not be steps, why


def read_client_files(paths: Sequence[str]) -> ClientSide | None:
    """Every step in `paths`, in file order, re-indexed from 0; None when `paths` is empty.
    A file that is neither form is a UsageError naming it."""
    if not paths:
        return None
    steps: list[StepResult] = []
    kinds: set[str] = set()
    skipped: list[str] = []
    for path in paths:
        text = _read(path)
        form, found, why = _parse(text, path)
        kinds.add(form)
        skipped += why
        for step in found:
            steps.append(step.model_copy(update={"index": len(steps)}))
    if len(kinds) > 1:
        raise UsageError("diagnose: --bench files mix bench_serving JSONL and sweep JSON; "
                         "give one kind")
    if not steps:
        raise UsageError(f"diagnose: no runs with a concurrency in {', '.join(paths)}")
    kind: Literal["bench_serving", "sweep"] = (
        "sweep" if kinds == {"sweep"} else "bench_serving")
    windows = kind == "sweep" and all(s.finished_at > s.started_at > 0 for s in steps)
    return ClientSide(steps=steps, kind=kind, windows=windows, files=list(paths),
                      skipped=skipped)


def _read(path: str) -> str:
    return read_text(path, f"diagnose: {path}", BENCH_FILE)

_TOO_DEEP = "diagnose: {path}: JSON nested deeper than Python's JSON reader goes"


def _parse(text: str, path: str) -> tuple[str, list[StepResult], list[str]]:
    stripped = text.strip()
    if stripped.startswith("{") and "\n{" not in stripped:
        try:
            whole = json.loads(stripped)
        except RecursionError:
            raise UsageError(_TOO_DEEP.format(path=path)) from None
        except ValueError:
            whole = None
        if isinstance(whole, dict) and isinstance(whole.get("steps"), list):
            return "sweep", _sweep_steps(whole["steps"], path), []
    try:
        records = parse_jsonl(text)
    except RecursionError:
        raise UsageError(_TOO_DEEP.format(path=path)) from None
    except ValueError:
        raise UsageError(f"diagnose: {path}: neither bench_serving JSONL nor sweep JSON"
                         ) from None
    if not records:
        raise UsageError(f"diagnose: {path}: no bench_serving records")
    steps: list[StepResult] = []
    skipped: list[str] = []
    for number, record in enumerate(records, 1):
        step = _bench_step(record)
        if step is None:
            skipped.append(f"{path} record {number}: no max_concurrency (a request-rate run)")
        else:
            steps.append(step)
    return "bench_serving", steps, skipped


def _bench_step(record: dict[str, Any]) -> StepResult | None:
    concurrency = record.get("max_concurrency")
    if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
        return None
    try:
        metrics = record_to_metrics(record, concurrency)
    except (TypeError, ValueError, ValidationError):
        return None
    ok = metrics.completed > 0
    return StepResult(index=0, concurrency=concurrency, status="ok" if ok else "failed",
                      metrics=metrics)


def _sweep_steps(items: list[Any], path: str) -> list[StepResult]:
    steps = []
    for item in items:
        try:
            steps.append(StepResult.model_validate(item))
        except ValidationError:
            raise UsageError(f"diagnose: {path}: a step of this sweep JSON does not read as "
                             "a Plateau step") from None
    return steps
