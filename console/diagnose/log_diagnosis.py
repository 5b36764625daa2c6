"""`plateau diagnose --log FILE [--bench FILE ...]`: the knee and ranked causes from a server
log (and the client's runs, when given), through the same rules as a stored sweep, each cause
with the evidence it lacked; "no clear cause" with what was checked rather than a guess.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from console.diagnose.client_files import ClientSide
from console.diagnose.diagnose import diagnose, diagnosis_json, diagnosis_lines
from console.diagnose.from_log import (
    LogRead,
    Split,
    dp_ranks_of,
    log_evidence,
    read_log,
    split_steps,
)
from console.diagnose.lacking import blocking, lacking
from console.diagnose.models import Diagnosis
from console.errors import UsageError
from console.inputfile import SERVER_LOG, text_chunks
from console.logs.crash_finding import CrashFinding
from console.logs.ladder import Ladder, LadderReader
from console.logs.ladder_plan import plan
from console.logs.ladder_text import ladder_lines
from console.logs.line_format import resolve_redraws
from console.sglang.batch import PREFILL_BATCH
from console.sglang.resolved import resolved_settings


@dataclass(frozen=True)
class LogDiagnosis:
    path: str
    lines: int
    decode_lines: int
    prefill_lines: int
    dp_ranks: int
    client: str | None
    client_files: list[str]
    split: Split
    diagnosis: Diagnosis
    lacking: dict[str, list[str]]
    inferred: list[str]
    effective: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    crash: CrashFinding | None = None
    """The crash or failed launch the log ends in: the first finding everywhere."""
    ladder: Ladder | None = None
    """The decode CUDA-graph ladder against the batches, when the log has Decode lines."""


def open_log(path: str) -> Iterator[str]:
    """The file's text in pieces that end at line ends (bad bytes replaced), within a server
    log's limits (console/inputfile.py: regular files only, size, line count and line length;
    one clear error otherwise), each piece's `\r` redraws resolved as logscan resolves them (a
    tqdm bar redrawn 36 times is one line)."""
    pieces = text_chunks(path, f"diagnose: {path}", SERVER_LOG, keep_carriage_returns=True)
    return (resolve_redraws(piece) for piece in pieces)


class NotAServerLog(UsageError):
    """The file holds no line SGLang (or its crash) writes: junk, empty, binary."""


def _check_server_log(read: LogRead, path: str) -> None:
    if read.lines == 0:
        raise NotAServerLog(f"{path or 'log'}: empty: not an SGLang server log")
    if not (read.batch or read.startup or read.sglang_lines or any(read.rowless.values())):
        raise NotAServerLog(
            f"{path or 'log'}: not an SGLang server log: none of its {read.lines} lines is a "
            "batch, startup, crash or SGLang-prefixed line")


def diagnose_log(chunks: Iterable[str], client: ClientSide | None = None,
                 path: str = "") -> LogDiagnosis:
    """`chunks`: the log's text ending at line ends (open_log, or from_log.text_chunks of a
    list of lines)."""
    # A long log is 10^6 small tuples of numbers and strings, none in a cycle: each collection
    # their allocation triggers scans them all and frees nothing (2/3 of the time on a 1M-line
    # log). Collection resumes, as it was, on the way out.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _diagnose_log(chunks, client, path)
    finally:
        if was_enabled:
            gc.enable()


def _diagnose_log(chunks: Iterable[str], client: ClientSide | None, path: str
                  ) -> LogDiagnosis:
    reader = LadderReader()
    read = read_log(_teed(chunks, reader))
    crash = read.crash.finding()
    if crash is None:
        _check_server_log(read, path)
    split = split_steps(read, client)
    evidence, inferred = log_evidence(read, split)
    ladder = _ladder(reader)
    diagnosis = diagnose(split.steps, evidence, ladder)
    blocked = blocking(evidence)
    update: dict[str, Any] = {
        "causes": [c for c in diagnosis.causes if c.id not in blocked],
        "candidates": [c for c in diagnosis.candidates if c.id not in blocked]}
    if split.knee is not None:
        update["knee"] = split.knee
    if not _repeated(split):
        # Without repeated runs at one concurrency the noise is the rules' floor, a prior:
        # a figure this log does not hold is not printed as the run's noise.
        update["noise"] = None
    diagnosis = diagnosis.model_copy(update=update)
    missing = lacking(evidence, client.kind if client else None,
                      startup_seen=bool(read.startup),
                      inferred_ceiling=inferred.graph_ceiling is not None,
                      inferred_cap=inferred.running_cap is not None)
    decode = sum(1 for d, *_ in read.batch if d)
    rowless = read.rowless
    return LogDiagnosis(
        path=path, lines=read.lines, decode_lines=decode + rowless["decode"],
        prefill_lines=len(read.batch) - decode + rowless["prefill"], dp_ranks=dp_ranks_of(read),
        client=client.kind if client else None, client_files=client.files if client else [],
        split=split, diagnosis=diagnosis, lacking=missing, inferred=list(inferred.notes),
        effective=effective_lines(read.startup, evidence.startup.running_cap_reduced_from,
                                  capture_failed=crash is not None and crash.capture),
        skipped=client.skipped if client else [], crash=crash, ladder=ladder)


def _teed(chunks: Iterable[str], reader: LadderReader) -> Iterator[str]:
    """The chunks, each read by the ladder too on its way (one pass over the file)."""
    for chunk in chunks:
        reader.feed_text(chunk)
        yield chunk


def _ladder(reader: LadderReader) -> Ladder | None:
    found = plan(reader)
    return found if found.decode_lines else None


def _repeated(split: Split) -> bool:
    """Whether the client ran some concurrency twice (the noise is then measured)."""
    seen = [s.concurrency for s in split.steps if s.status == "ok"]
    return split.how != "levels" and len(seen) != len(set(seen))


def effective_lines(startup: list[str], reduced_from: int | None = None, *,
                    capture_failed: bool = False) -> list[str]:
    """`--flag requested → effective` for what SGLang resolved or clamped, from its startup
    lines; the requested side is server_args' (or a clamp line's) when the log has it. After
    a failed CUDA-graph capture no graph size is in effect: the server never ran with it."""
    return [r.text() for r in resolved_settings(startup, reduced_from)
            if not (capture_failed and r.flag.startswith("cuda-graph"))]


def log_diagnosis_json(result: LogDiagnosis) -> dict[str, Any]:
    body = diagnosis_json(result.diagnosis)
    for cause in body["causes"]:
        cause["lacking"] = result.lacking.get(cause["id"], [])
    named = {c["id"] for c in body["causes"]}
    body["not_seen"] = {k: v for k, v in result.lacking.items() if k not in named and v}
    return {
        "log": result.path,
        "crash": None if result.crash is None else result.crash.as_json(),
        "lines": result.lines,
        "decode_lines": result.decode_lines,
        "prefill_lines": result.prefill_lines,
        "dp_ranks": result.dp_ranks,
        "client": result.client,
        "client_files": result.client_files,
        "steps_by": result.split.how,
        "steps": [{"index": e.index, "concurrency": e.concurrency,
                   "decode_lines": len(e.decode_rows), "prefill_lines": len(e.prefill_rows)}
                  for e in result.split.evidence],
        "inferred": result.inferred,
        "effective": result.effective,
        "skipped": result.skipped,
        "diagnosis": body,
        "ladder": None if result.ladder is None else result.ladder.model_dump(mode="json"),
    }


def log_diagnosis_lines(result: LogDiagnosis, top: int = 5) -> list[str]:
    """The text report: what was read, the knee, the causes with what they lacked."""
    d = result.diagnosis
    ranks = f", {result.dp_ranks} DP ranks" if result.dp_ranks > 1 else ""
    out = [f"log {result.path}: {result.lines} lines, {result.decode_lines} Decode and "
           f"{result.prefill_lines} {PREFILL_BATCH} lines{ranks}"]
    if result.crash is not None:
        out.append(f"crash: {result.crash.sentence()}")
    if result.client:
        runs = len(result.split.steps)
        out.append(f"client: {runs} {result.client.replace('_', ' ')} run(s) from "
                   f"{', '.join(result.client_files)}")
    out += [f"  {note}" for note in result.split.notes]
    out += [f"  skipped: {why}" for why in result.skipped]
    out.append(f"knee: {d.knee.sentence}")
    for text in result.effective:
        out.append(f"effective: {text}")
    for note in result.inferred:
        out.append(f"inferred: {note}")
    if result.ladder is not None:
        out += [f"ladder: {line}" for line in ladder_lines(result.ladder)]
    if not d.causes:
        out.append("why: no clear cause (abstaining rather than guessing)")
        out.append("  checked: " + "; ".join(d.checked))
        return out + _not_seen(result)
    for line in diagnosis_lines(d, top=top):
        out.append(line)
        if line.startswith("why #"):
            cause_id = line.split(": ", 2)[1].split(" ", 1)[0]
            for item in result.lacking.get(cause_id, []):
                out.append(f"    lacked: {item}")
    return out + _not_seen(result)


def _not_seen(result: LogDiagnosis) -> list[str]:
    """The causes this log could not show, each with what it lacked (the JSON's
    `not_seen`)."""
    named = {c.id for c in result.diagnosis.causes}
    return [f"  {cause_id} not seen; lacked: " + "; ".join(items)
            for cause_id, items in result.lacking.items() if items and cause_id not in named]


__all__ = ["LogDiagnosis", "diagnose_log", "log_diagnosis_json",
           "log_diagnosis_lines", "open_log"]
