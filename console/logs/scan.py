"""Whole-log analysis for post-mortems (`plateau logscan`): notable events with explanations,
startup phases per launch, and a summary of the batch stats. Streaming: memory does not grow
with the log (only counters, one record per catalogue id and capped lists)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from itertools import islice
from typing import TypeVar

from pydantic import BaseModel, Field

from console.logs.catalogue import Catalogue, default_catalogue
from console.logs.classify import access_severity
from console.logs.crash_finding import CrashWatch
from console.logs.decode_rate import DecodeRateGate
from console.logs.ladder import Ladder
from console.logs.models import LogEvent, Severity
from console.logs.scan_launch import Launch, LaunchState, feed_launch, finish_launch
from console.logs.scan_rows import A_STATUS, Row, batch_row
from console.sglang.batch import BATCH_PREFIXES, scan_values
from console.sglang.crash import TRACEBACK, exception_line, is_oom
from console.sglang.dp import NodeBatches, NodeSample, imbalance
from console.sglang.prefix import dp_rank
from console.sglang.server_args import server_args_form
from console.sglang.startup import parse_startup

_MAX_OTHER = 1000
_N = TypeVar("_N", int, float)
_DEBUG = Severity.DEBUG
_EXAMPLE_CHARS = 300
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


class CudaGraphOffPeriod(BaseModel):
    start_line: int
    end_line: int
    start_timestamp: str | None = None
    end_timestamp: str | None = None
    decode_lines: int


class NodeSummary(BaseModel):
    """Node level with DP ranks (console/sglang/dp.py): the ranks' latest lines summed."""

    samples: int = 0
    max_running_reqs: int | None = None
    max_queue_reqs: int | None = None
    peak_gen_throughput: float | None = None
    peak_gen_timestamp: str | None = None
    mean_gen_throughput: float | None = None
    busiest_rank: str | None = None
    idlest_rank: str | None = None
    rank_running_mean_max: float | None = None
    rank_running_mean_min: float | None = None
    rank_imbalance: float | None = None
    """Mean #running-req of the busiest DP rank over the idlest's."""


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
    decode_lines_with_graph: int = 0
    """Decode lines with a graph field: none (before SGLang 0.4) means the graph state is
    unknown, never "off"."""
    decode_lines_eager: int = 0
    """Decode lines with `cuda graph: False`."""
    dp_ranks: list[str] = Field(default_factory=list)
    """DP ranks that wrote batch lines (`DP0`, ...); empty for a single stream."""
    node: NodeSummary | None = None
    """With 2+ DP ranks: what the node ran (the ranks' lines summed per timestamp)."""


class ExceptionSummary(BaseModel):
    """A traceback's final exception line (whether or not the catalogue knows it)."""

    line: int
    timestamp: str | None = None
    text: str
    oom: bool = False


class CrashSummary(BaseModel):
    """The crash or failed launch the log shows (console/logs/crash_finding.py): the first
    thing a report says."""

    kind: str
    title: str
    line: int
    timestamp: str | None = None
    text: str


class ScanReport(BaseModel):
    source: str
    lines: int = 0
    crash: CrashSummary | None = None
    events: int = 0
    severity_counts: dict[str, int] = Field(default_factory=dict)
    notable: list[NotableSummary] = Field(default_factory=list)
    other: list[OtherSummary] = Field(default_factory=list)
    launches: list[Launch] = Field(default_factory=list)
    batches: BatchSummary = Field(default_factory=BatchSummary)
    exceptions: list[ExceptionSummary] = Field(default_factory=list)
    oom: bool = False
    """Some line reports the GPU out of memory, in any wording (console/sglang/crash.py)."""
    ladder: Ladder | None = None
    """The decode CUDA-graph ladder against the batches (console/logs/ladder.py), when the
    log has Decode lines."""


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
        self._launches: list[LaunchState] = []
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
        self._graph_lines = 0
        self._eager_lines = 0
        self._node = NodeBatches()
        self._node_samples = 0
        self._node_max_running: int | None = None
        self._node_max_queue: int | None = None
        self._node_peak: tuple[float, str | None] | None = None
        self._node_gen_sum = 0.0
        self._node_gen_n = 0
        self._exceptions: list[ExceptionSummary] = []
        self._oom = False
        self._crash_watch = CrashWatch()

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
            if severity >= warning:
                self._crash(event)
            else:
                self._crash_watch.feed((event,))  # a capture's begin and end
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
        self._node_sample(self._node.flush())
        report.exceptions = self._exceptions
        report.oom = self._oom
        found = self._crash_watch.finding
        if found is not None:
            report.crash = CrashSummary(kind=found.kind, title=found.title, line=found.line,
                                        timestamp=found.timestamp, text=found.text)
        report.lines = self._lines
        report.events = self._events
        report.severity_counts = {severity.label: n for severity, n in self._counts.items()}
        self._close_graph_off()
        order = {sev.label: -int(sev) for sev in Severity}
        report.notable = sorted(
            self._notable.values(), key=lambda n: (order[n.severity], n.first_line)
        )
        report.other = sorted(self._other.values(), key=lambda o: (order[o.severity], -o.count))
        report.launches = [finish_launch(state) for state in self._launches]
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
        batches.decode_lines_with_graph = self._graph_lines
        batches.decode_lines_eager = self._eager_lines
        batches.dp_ranks = sorted((k for k in self._node.tallies if k),
                                  key=lambda k: int(k[2:]))
        if len(batches.dp_ranks) > 1:
            batches.node = self._node_summary()
        return report

    def _node_summary(self) -> NodeSummary:
        node = NodeSummary(samples=self._node_samples, max_running_reqs=self._node_max_running,
                           max_queue_reqs=self._node_max_queue)
        if self._node_peak is not None:
            node.peak_gen_throughput, node.peak_gen_timestamp = self._node_peak
        if self._node_gen_n:
            node.mean_gen_throughput = round(self._node_gen_sum / self._node_gen_n, 2)
        spread = imbalance(self._node.tallies)
        if spread is not None:
            node.busiest_rank, node.idlest_rank = spread.busiest, spread.idlest
            node.rank_running_mean_max = spread.running_mean_max
            node.rank_running_mean_min = spread.running_mean_min
            node.rank_imbalance = spread.ratio
        return node

    def _node_sample(self, sample: NodeSample | None) -> None:
        if sample is None:
            return
        self._node_samples += 1
        if self._node_max_running is None or sample.running > self._node_max_running:
            self._node_max_running = sample.running
        if self._node_max_queue is None or sample.queue > self._node_max_queue:
            self._node_max_queue = sample.queue
        gen = sample.gen_throughput
        if gen is not None:
            if self._node_peak is None or gen > self._node_peak[0]:
                self._node_peak = (gen, sample.timestamp)
            if sample.running:
                self._node_gen_sum += gen
                self._node_gen_n += 1

    # -- crashes ----------------------------------------------------------------------------

    def _crash(self, event: LogEvent) -> None:
        """A traceback's exception line, and GPU out-of-memory in any wording."""
        text = exception_line(event.lines) if len(event.lines) > 1 or event.kind == "traceback" \
            else None
        if text is not None and len(self._exceptions) < _MAX_OTHER:
            self._exceptions.append(ExceptionSummary(
                line=event.seq + 1, timestamp=event.timestamp, text=text[:_EXAMPLE_CHARS],
                oom=is_oom(text)))
        if not self._oom and (is_oom(event.message) or (text is not None and is_oom(text))):
            self._oom = True
        self._crash_watch.feed((event,))

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
        message = event.message
        if event.kind == "traceback" or TRACEBACK in message:
            message = exception_line(event.lines) or message  # the exception, not the header
        key = re.sub(r"\d+", "N", message[:160])
        found = self._other.get(key)
        if found is not None:
            found.count += 1
        elif len(self._other) < _MAX_OTHER:
            self._other[key] = OtherSummary(
                severity=event.severity.label,
                count=1,
                first_line=event.seq + 1,
                example=message[:_EXAMPLE_CHARS],
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
            dp = dp_rank(event.ranks)[2:] if event.ranks else ""
            self._tally((batch_row(values, event.timestamp, dp),), 0, 1, event.seq)

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
        graph_lines, eager_lines = self._graph_lines, self._eager_lines
        ints, floats = self._ints, self._floats
        not_debug = 0
        line = seq - start + 1  # the 1-based line of rows[index] is line + index
        for index, (ts, dp, decode, run, use, alen, graph, gen, queue, prefill, p_use, p_run,
                    p_queue, p_rate, method, path, status, _raw) in enumerate(
                        islice(rows, start, end), start):
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
                    graph_lines += 1
                    if graph_off:
                        self._close_graph_off()
                        graph_off = False
                elif graph == "False":
                    graph_lines += 1
                    eager_lines += 1
                    self._graph_off_line(line + index, ts)
                    graph_off = True
                if dp:  # DP ranks: the node runs their sum (console/sglang/dp.py)
                    self._node_sample(self._node.add(
                        ts, "DP" + dp, running, _opt_int(queue),
                        float(gen) if rate_ok and gen else None,
                        _opt_float(use), None if not graph else graph == "True"))
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
        self._graph_lines, self._eager_lines = graph_lines, eager_lines
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
        if server_args_form(event.message) is not None:
            if self._is_preamble():
                # Lines before the argument line (a warning from ServerArgs' checks, the
                # launcher's notices) belong to this launch: do not count a second one.
                self._launches[-1].from_args = True
            else:
                self._launches.append(LaunchState(len(self._launches) + 1, event))
        elif not self._launches:
            # The first timestamped line opens a launch; so does a startup line of a log
            # whose prefixes were stripped (pasted into an issue).
            if event.timestamp is None and parse_startup(event.message) is None:
                return
            self._launches.append(LaunchState(1, event))
        state = self._launches[-1]
        if event.kind == "access":
            state.served = True
        feed_launch(state, event)

    def _is_preamble(self) -> bool:
        """The open launch was opened implicitly and has seen nothing of a server yet."""
        return bool(self._launches) and self._launches[-1].is_preamble()


def _opt_int(text: str) -> int | None:
    return int(text) if text else None


def _opt_float(text: str) -> float | None:
    return float(text) if text else None


_CONVERTED_MAX = 4096


def _convert(cache: dict[str, _N], text: str, convert: Callable[[str], _N]) -> _N:
    """`convert(text)`, remembered in `cache` (cleared when full: memory stays bounded)."""
    value = convert(text)
    if len(cache) >= _CONVERTED_MAX:
        cache.clear()
    cache[text] = value
    return value
