"""Whole-log analysis for post-mortems (`plateau logscan`): notable events with explanations,
startup phases per launch, and a summary of the batch stats. Streaming: memory does not grow
with the log (only counters, one record per catalogue id and capped lists)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from itertools import islice
from typing import TypeVar

from pydantic import BaseModel, Field

from console.logs.batch_stats import scan_values
from console.logs.catalogue import Catalogue, default_catalogue
from console.logs.classify import BATCH_PREFIXES, access_severity
from console.logs.decode_rate import DecodeRateGate
from console.logs.models import LogEvent, Severity
from console.logs.scan_rows import A_STATUS, Row, batch_row

_MAX_OTHER = 1000
_N = TypeVar("_N", int, float)
_DEBUG = Severity.DEBUG
_EXAMPLE_CHARS = 300
_ELAPSED = re.compile(r"elapsed=([\d.]+) s")
_TIMINGS = re.compile(r"(\w+)=([\d.]+)")
_GRAPH_BEGIN = re.compile(r"Capture .*CUDA graph begin\.")
_GRAPH_END = re.compile(r"Capture .*CUDA graph end\.")
_FATAL_IDS = frozenset(
    {
        "scheduler-exception",
        "manager-exception",
        "sigquit-child-launch",
        "sigquit-running",
        "warmup-failed",
        "scheduler-died-init",
        "not-enough-memory",
        "cuda-graph-capture-failed",
        "decode-oom",
        "subprocess-crashed",
        "watchdog-timeout",
    }
)


class NotableSummary(BaseModel):
    id: str
    title: str
    severity: str
    count: int
    explanation: str
    action: str
    first_line: int
    last_line: int
    first_timestamp: str | None = None
    last_timestamp: str | None = None
    example: str


class OtherSummary(BaseModel):
    """A warning/error no catalogue entry explains, grouped by its text with digits masked."""

    severity: str
    count: int
    first_line: int
    example: str


class StartupPhase(BaseModel):
    name: str
    seconds: float
    start_line: int
    source: str = "timestamps"
    """`timestamps` (1 s resolution without SGLANG_LOG_MS) or `elapsed` (SGLang's own figure)."""


class Launch(BaseModel):
    index: int
    start_line: int
    start_timestamp: str | None = None
    outcome: str = "unknown"
    """ready | failed | stopped | unknown (log ends while starting)."""
    ready_line: int | None = None
    ready_timestamp: str | None = None
    startup_seconds: float | None = None
    phases: list[StartupPhase] = Field(default_factory=list)
    engine_timings: dict[str, float] = Field(default_factory=dict)
    fatal: str | None = None


class CudaGraphOffPeriod(BaseModel):
    start_line: int
    end_line: int
    start_timestamp: str | None = None
    end_timestamp: str | None = None
    decode_lines: int


class BatchSummary(BaseModel):
    prefill_lines: int = 0
    decode_lines: int = 0
    decode_lines_not_rate: int = 0
    """Decode lines right after an idle spell: their throughput is not a rate (not counted)."""
    peak_gen_throughput: float | None = None
    peak_gen_line: int | None = None
    peak_gen_timestamp: str | None = None
    mean_gen_throughput: float | None = None
    """Mean over decode lines with at least one running request."""
    peak_input_throughput: float | None = None
    max_running_reqs: int | None = None
    max_queue_reqs: int | None = None
    max_token_usage: float | None = None
    mean_accept_len: float | None = None
    cuda_graph_off: list[CudaGraphOffPeriod] = Field(default_factory=list)


class ScanReport(BaseModel):
    source: str
    lines: int = 0
    events: int = 0
    severity_counts: dict[str, int] = Field(default_factory=dict)
    notable: list[NotableSummary] = Field(default_factory=list)
    other: list[OtherSummary] = Field(default_factory=list)
    launches: list[Launch] = Field(default_factory=list)
    batches: BatchSummary = Field(default_factory=BatchSummary)


class _LaunchState:
    def __init__(self, index: int, event: LogEvent) -> None:
        self.launch = Launch(index=index, start_line=event.seq + 1,
                             start_timestamp=event.timestamp)
        # Opened by its `server_args=` line, or implicitly by the file's first timestamped
        # line (a log that begins mid-launch).
        self.from_args = event.message.startswith("server_args=")
        self.served = False  # saw batch or access lines: a running server, not a preamble
        self.marks: dict[str, tuple[int, str | None]] = {}
        self.elapsed: dict[str, float] = {}
        self.graph_elapsed: dict[str, float] = {}  # rank prefix -> its capture seconds

    def mark(self, key: str, event: LogEvent, *, last: bool = False) -> None:
        if last or key not in self.marks:
            self.marks[key] = (event.seq + 1, event.timestamp)


class LogScanner:
    """Feed events in file order, then call `report()`.

    The per-event work is kept to plain counters and attributes (batch lines are most of a
    log; updating pydantic models per line cost more than parsing it): the report's models are
    filled from them in `report()`.
    """

    def __init__(self, source: str, catalogue: Catalogue | None = None) -> None:
        self.catalogue = catalogue if catalogue is not None else default_catalogue()
        self.report_ = ScanReport(source=source)
        self._notable: dict[str, NotableSummary] = {}
        self._other: dict[str, OtherSummary] = {}
        self._launches: list[_LaunchState] = []
        self._counts: dict[Severity, int] = {}  # in order of first appearance, as reported
        self._lines = 0
        self._events = 0
        self._gen_sum = 0.0
        self._gen_n = 0
        self._accept_sum = 0.0
        self._accept_n = 0
        self._graph_off: CudaGraphOffPeriod | None = None
        self._rate_gate = DecodeRateGate()
        self._prefill_lines = 0
        self._decode_lines = 0
        self._decode_not_rate = 0
        self._peak_gen: tuple[float, int, str | None] | None = None  # value, line, timestamp
        self._peak_input: float | None = None
        self._max_running: int | None = None
        self._max_queue: int | None = None
        self._max_usage: float | None = None
        # Counts and usages repeat: their values by text (converting costs more than the
        # rest of a row); bounded, see _convert.
        self._ints: dict[str, int] = {}
        self._floats: dict[str, float] = {}

    def feed(self, events: Iterable[LogEvent]) -> None:
        counts = self._counts
        launches = self._launches
        batch_prefixes = BATCH_PREFIXES
        warning = Severity.WARNING
        seen = lines = 0
        for event in events:
            seen += 1
            lines += len(event.lines)
            severity = event.severity
            counts[severity] = counts.get(severity, 0) + 1
            if event.message.startswith(batch_prefixes):
                if launches:
                    launches[-1].served = True
                self._batch(event)
                continue
            kind = event.kind
            if kind == "access" and launches:
                # An access line only marks the launch as serving (_launch_marks would do
                # just that: no milestone or catalogue entry is an access line).
                launches[-1].served = True
                continue
            self._launch_marks(event)
            if event.catalogue_id is not None:
                self._note(event, event.catalogue_id)
                if event.cause_id is not None:
                    self._note(event, event.cause_id, example=self._cause_line(event))
            elif severity >= warning and kind != "access":
                self._other_event(event)
        self._events += seen
        self._lines += lines

    def report(self) -> ScanReport:
        report = self.report_
        report.lines = self._lines
        report.events = self._events
        report.severity_counts = {severity.label: n for severity, n in self._counts.items()}
        self._close_graph_off()
        order = {sev.label: -int(sev) for sev in Severity}
        report.notable = sorted(
            self._notable.values(), key=lambda n: (order[n.severity], n.first_line)
        )
        report.other = sorted(self._other.values(), key=lambda o: (order[o.severity], -o.count))
        report.launches = [self._finish_launch(state) for state in self._launches]
        batches = report.batches
        batches.prefill_lines = self._prefill_lines
        batches.decode_lines = self._decode_lines
        batches.decode_lines_not_rate = self._decode_not_rate
        if self._peak_gen is not None:
            (batches.peak_gen_throughput, batches.peak_gen_line,
             batches.peak_gen_timestamp) = self._peak_gen
        batches.peak_input_throughput = self._peak_input
        batches.max_running_reqs = self._max_running
        batches.max_queue_reqs = self._max_queue
        batches.max_token_usage = self._max_usage
        batches.mean_gen_throughput = (
            round(self._gen_sum / self._gen_n, 2) if self._gen_n else None
        )
        batches.mean_accept_len = (
            round(self._accept_sum / self._accept_n, 3) if self._accept_n else None
        )
        return report

    # -- notable ----------------------------------------------------------------------------

    def _cause_line(self, event: LogEvent) -> str:
        for line in reversed(event.lines):
            if self.catalogue.match_id(line) == event.cause_id:
                return line
        return event.message

    def _note(self, event: LogEvent, entry_id: str, *, example: str | None = None) -> None:
        entry = self.catalogue.by_id.get(entry_id)
        if entry is None:
            return
        line = event.seq + 1
        found = self._notable.get(entry_id)
        if found is None:
            self._notable[entry_id] = NotableSummary(
                id=entry.id,
                title=entry.title or entry.id,
                severity=entry.severity.label,
                count=1,
                explanation=entry.explanation,
                action=entry.action,
                first_line=line,
                last_line=line,
                first_timestamp=event.timestamp,
                last_timestamp=event.timestamp,
                example=(example or event.message)[:_EXAMPLE_CHARS],
            )
            return
        found.count += 1
        found.last_line = line
        found.last_timestamp = event.timestamp

    def _other_event(self, event: LogEvent) -> None:
        key = re.sub(r"\d+", "N", event.message[:160])
        found = self._other.get(key)
        if found is not None:
            found.count += 1
        elif len(self._other) < _MAX_OTHER:
            self._other[key] = OtherSummary(
                severity=event.severity.label,
                count=1,
                first_line=event.seq + 1,
                example=event.message[:_EXAMPLE_CHARS],
            )

    # -- batches ----------------------------------------------------------------------------

    def standard_rows(self, rows: Sequence[Row], start: int, end: int, first_seq: int) -> int:
        """Standard lines read by scan_rows.ROWS, `rows[start:end]`, the first at line
        `first_seq`, each a whole event: the same as feeding their one-line events (the
        whole-file scan's fast path, see scan_fast.py). Stops at an access line before any
        launch (fed as an event, it opens one); returns the index it stopped at."""
        launches = self._launches
        if not launches:
            end = next((i for i in range(start, end) if rows[i][A_STATUS]), end)
        not_debug = self._tally(rows, start, end, first_seq)
        done = end - start
        if done:
            if launches:
                launches[-1].served = True
            self._events += done
            self._lines += done
            if done > not_debug:
                counts = self._counts
                counts[_DEBUG] = counts.get(_DEBUG, 0) + done - not_debug
        return end

    def _batch(self, event: LogEvent) -> None:
        values = scan_values(event.message)
        if values is not None:
            self._tally((batch_row(values, event.timestamp),), 0, 1, event.seq)

    def _tally(self, rows: Sequence[Row], start: int, end: int, seq: int) -> int:
        """Batch stats of the batch rows in `rows[start:end]` and the severity counts of its
        access rows that are not DEBUG. Returns how many rows it counted at another severity
        than DEBUG. The one place a batch line is accounted,
        whether the fast path read it or scan_values (batch_row).

        The state lives in locals for the loop (batch lines are most of a log) and goes back
        to the attributes at the end; rows are unpacked in scan_rows' layout order.
        """
        gate = self._rate_gate
        stamp, idle = gate.last_stamp, gate.after_idle
        counts = self._counts
        peak = self._peak_gen
        peak_value = 0.0 if peak is None else peak[0]
        peak_input = self._peak_input
        max_running, max_queue, max_usage = self._max_running, self._max_queue, self._max_usage
        gen_sum, gen_n = self._gen_sum, self._gen_n
        accept_sum, accept_n = self._accept_sum, self._accept_n
        decode_lines, prefill_lines, not_rate = (
            self._decode_lines, self._prefill_lines, self._decode_not_rate)
        graph_off = self._graph_off is not None
        ints, floats = self._ints, self._floats
        not_debug = 0
        line = seq - start + 1  # the 1-based line of rows[index] is line + index
        for index, (ts, decode, run, use, alen, graph, gen, queue, prefill, p_use, p_run, p_queue,
                    p_rate, method, path, status, _raw) in enumerate(islice(rows, start, end),
                                                                      start):
            if decode:
                decode_lines += 1
                if ts == stamp and not idle:
                    rate_ok = True
                else:
                    rate_ok = gate.decode_is_rate(ts)
                    stamp, idle = gate.last_stamp, False
                running = None
                if run:
                    try:
                        running = ints[run]
                    except KeyError:
                        running = _convert(ints, run, int)
                    if max_running is None or running > max_running:
                        max_running = running
                if not rate_ok:
                    not_rate += 1  # the first line after idle: its window spans the idle spell
                elif gen:
                    rate = float(gen)
                    if rate > peak_value or peak is None:
                        peak = (rate, line + index, ts)
                        peak_value = rate
                    if running:
                        gen_sum += rate
                        gen_n += 1
                if alen:
                    try:
                        accept_sum += floats[alen]
                    except KeyError:
                        accept_sum += _convert(floats, alen, float)
                    accept_n += 1
                if graph == "True":
                    if graph_off:
                        self._close_graph_off()
                        graph_off = False
                elif graph == "False":
                    self._graph_off_line(line + index, ts)
                    graph_off = True
            elif prefill:
                prefill_lines += 1
                running = None
                use, queue = p_use, p_queue
                if p_run:
                    try:
                        running = ints[p_run]
                    except KeyError:
                        running = _convert(ints, p_run, int)
                    if max_running is None or running > max_running:
                        max_running = running
                if ts != stamp:
                    gate.prefill(running, ts)
                    stamp, idle = gate.last_stamp, gate.after_idle
                if p_rate:
                    rate = float(p_rate)
                    if peak_input is None or rate > peak_input:
                        peak_input = rate
            else:  # an access row
                if status >= "400":
                    severity = access_severity(int(status), method, path)
                    if severity is not _DEBUG:
                        if _DEBUG not in counts and index - start > not_debug:
                            counts[_DEBUG] = 0  # DEBUG rows came first: keep the key order
                        counts[severity] = counts.get(severity, 0) + 1
                        not_debug += 1
                continue
            if queue:
                try:
                    queued = ints[queue]
                except KeyError:
                    queued = _convert(ints, queue, int)
                if max_queue is None or queued > max_queue:
                    max_queue = queued
            if use:
                try:
                    usage = floats[use]
                except KeyError:
                    usage = _convert(floats, use, float)
                if max_usage is None or usage > max_usage:
                    max_usage = usage
        self._peak_gen, self._peak_input = peak, peak_input
        self._max_running, self._max_queue, self._max_usage = max_running, max_queue, max_usage
        self._gen_sum, self._gen_n = gen_sum, gen_n
        self._accept_sum, self._accept_n = accept_sum, accept_n
        self._decode_lines, self._prefill_lines, self._decode_not_rate = (
            decode_lines, prefill_lines, not_rate)
        return not_debug

    def _graph_off_line(self, line: int, timestamp: str | None) -> None:
        period = self._graph_off
        if period is None:
            self._graph_off = CudaGraphOffPeriod(
                start_line=line, end_line=line, start_timestamp=timestamp,
                end_timestamp=timestamp, decode_lines=1,
            )
        else:
            period.end_line = line
            period.end_timestamp = timestamp
            period.decode_lines += 1

    def _close_graph_off(self) -> None:
        if self._graph_off is not None:
            periods = self.report_.batches.cuda_graph_off
            if len(periods) < _MAX_OTHER:
                periods.append(self._graph_off)
            self._graph_off = None

    # -- launches and startup phases --------------------------------------------------------

    def _launch_marks(self, event: LogEvent) -> None:
        message = event.message
        if message.startswith("server_args="):
            if self._is_preamble():
                # Lines before the argument line (a warning from ServerArgs' checks, the
                # launcher's notices) belong to this launch: do not count a second one.
                self._launches[-1].from_args = True
            else:
                self._launches.append(_LaunchState(len(self._launches) + 1, event))
        elif not self._launches:
            if event.timestamp is None:
                return
            self._launches.append(_LaunchState(1, event))
        state = self._launches[-1]
        if event.kind == "access":
            state.served = True
        launch = state.launch
        if message.startswith("Load weight begin"):
            state.mark("weights_begin", event)
        elif message.startswith("Load weight end"):
            state.mark("weights_end", event)
            found = _ELAPSED.search(message)
            if found:
                state.elapsed.setdefault("load weights", float(found.group(1)))
        elif message.startswith("Memory pool end") or "KV Cache is allocated" in message:
            state.mark("kv_end", event, last=True)
        elif _GRAPH_BEGIN.match(message):
            state.mark("graph_begin", event)
        elif _GRAPH_END.match(message):
            state.mark("graph_end", event, last=True)
            found = _ELAPSED.search(message)
            if found:
                # Every rank captures at the same time: sum a rank's captures (prefill, then
                # decode graphs), never the ranks' (8 ranks of 1.2 s are 1.2 s of startup).
                per_rank = state.graph_elapsed
                per_rank[event.ranks] = per_rank.get(event.ranks, 0.0) + float(found.group(1))
                state.elapsed["CUDA graph capture"] = round(max(per_rank.values()), 3)
        elif message.startswith("max_total_num_tokens="):
            state.mark("scheduler_ready", event)
        elif message.startswith("Engine startup timings (s):"):
            body = message.split(":", 1)[1]
            launch.engine_timings = {k: float(v) for k, v in _TIMINGS.findall(body)}
        elif message.startswith("Uvicorn running on"):
            state.mark("http_up", event)
        elif event.catalogue_id == "server-ready" and launch.outcome == "unknown":
            launch.outcome = "ready"
            launch.ready_line = event.seq + 1
            launch.ready_timestamp = event.timestamp
        elif event.catalogue_id in _FATAL_IDS and launch.outcome in ("unknown", "ready"):
            launch.outcome = "failed"
            launch.fatal = event.catalogue_id
        elif event.catalogue_id == "sigterm-draining" and launch.outcome in ("unknown", "ready"):
            launch.outcome = "stopped"

    def _is_preamble(self) -> bool:
        """The open launch was opened implicitly and has seen nothing of a server yet."""
        if not self._launches:
            return False
        state = self._launches[-1]
        return not (
            state.from_args
            or state.served
            or state.marks
            or state.launch.outcome != "unknown"
            or state.launch.engine_timings
        )

    def _finish_launch(self, state: _LaunchState) -> Launch:
        launch = state.launch
        marks = state.marks
        start = (launch.start_line, launch.start_timestamp)
        ready = (
            (launch.ready_line, launch.ready_timestamp) if launch.ready_line is not None else None
        )
        spans = [
            ("load weights", marks.get("weights_begin"), marks.get("weights_end")),
            ("KV cache allocation", marks.get("weights_end"), marks.get("kv_end")),
            ("CUDA graph capture", marks.get("graph_begin"), marks.get("graph_end")),
            ("HTTP server start", marks.get("scheduler_ready") or marks.get("graph_end"),
             marks.get("http_up")),
            ("warmup", marks.get("http_up"), ready),
            ("total", start, ready),
        ]
        for name, begin, end in spans:
            if name in state.elapsed and begin is not None:
                launch.phases.append(StartupPhase(name=name, seconds=state.elapsed[name],
                                                  start_line=begin[0], source="elapsed"))
                continue
            seconds = _seconds_between(begin, end)
            if seconds is not None and begin is not None:
                launch.phases.append(StartupPhase(name=name, seconds=seconds,
                                                  start_line=begin[0]))
        total = next((p.seconds for p in launch.phases if p.name == "total"), None)
        launch.startup_seconds = total
        return launch


_CONVERTED_MAX = 4096


def _convert(cache: dict[str, _N], text: str, convert: Callable[[str], _N]) -> _N:
    """`convert(text)`, remembered in `cache` (cleared when full: memory stays bounded)."""
    value = convert(text)
    if len(cache) >= _CONVERTED_MAX:
        cache.clear()
    cache[text] = value
    return value


def _seconds_between(
    begin: tuple[int, str | None] | None, end: tuple[int | None, str | None] | None
) -> float | None:
    if begin is None or end is None or begin[1] is None or end[1] is None:
        return None
    a, b = _parse_ts(begin[1]), _parse_ts(end[1])
    if a is None or b is None or b < a:
        return None
    return round((b - a).total_seconds(), 3)


def _parse_ts(value: str) -> datetime | None:
    for fmt in ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M:%S,%f"):
        try:
            return datetime.strptime(value, fmt)
        except ValueError:
            continue
    return None

