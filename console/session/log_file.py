"""A server log copied off a host, as session events: `plateau --log FILE [--bench FILE ...]`
opens the console on it the way `plateau diagnose --log` diagnoses it.

The file goes through the parsers a live host's log goes through (console/logs/assembler,
server_stats.StatsAggregator): the log view shows its lines with the catalogue's explanations,
the strip its last batch values; the diagnosis is diagnose --log's (log_diagnosis.diagnose_log),
carried beside the events for the Why view."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from console.diagnose.client_files import read_client_files
from console.diagnose.log_diagnosis import LogDiagnosis, diagnose_log, log_diagnosis_lines
from console.errors import file_as_usage_error
from console.logs.assembler import parse_lines
from console.logs.line_format import resolve_redraws
from console.logs.server_stats import StatsAggregator
from console.session.events import ConnectionChanged, LogBatch, Problem, SessionEvent, StatsUpdate

BATCH = 2_000  # events per LogBatch: the log view takes a batch at a time


@dataclass(frozen=True)
class LogFile:
    path: str
    events: list[SessionEvent]
    diagnosis: LogDiagnosis

    @property
    def label(self) -> str:
        """What the header says: the file shown, in place of a live host."""
        return f"log {Path(self.path).name}"

    @property
    def summary(self) -> str:
        """`log FILE: N lines, ...` (diagnose --log's first line)."""
        return log_diagnosis_lines(self.diagnosis)[0]


def read_text(path: str) -> str:
    """The file's text (bad bytes replaced, `\\r` redraws resolved as logscan reads them);
    one clear error when it cannot be read."""
    with file_as_usage_error(f"--log {path}"), open(
            path, encoding="utf-8", errors="replace", newline="") as handle:
        text = handle.read()
    return resolve_redraws(text)


def read_log_file(host: str, path: str, bench: list[str] | None = None) -> LogFile:
    """The file's events for a session named `host`, and its diagnosis (with the client's
    side from `bench`: bench_serving JSONL or `plateau sweep --json`)."""
    text = read_text(path)
    client = read_client_files(bench or [])
    diagnosis = diagnose_log([text if text.endswith("\n") else text + "\n"], client, path=path)
    body = text[:-1] if text.endswith("\n") else text
    parsed = parse_lines(body.split("\n") if body else [])
    stats = StatsAggregator(history=240, clock=lambda: 0.0)  # a file: nothing ages
    events: list[SessionEvent] = [
        ConnectionChanged(host, "closed", f"a log file ({path}): no host to reach")]
    for start in range(0, len(parsed), BATCH):
        chunk = tuple(parsed[start:start + BATCH])
        events.append(LogBatch(host, chunk, source=path))
        stats.add_events(chunk)
    events.append(StatsUpdate(host, stats.snapshot()))
    if diagnosis.crash is not None:  # the first finding: an error in the event log too
        events.append(Problem(host, "log", f"crash: {diagnosis.crash.sentence()}"))
    events.append(Problem(host, "log", log_diagnosis_lines(diagnosis)[0], level="info"))
    return LogFile(path, events, diagnosis)
