"""Evidence from a server log file alone, or with the client's runs (client_files.py), so
`plateau diagnose --log FILE [--bench FILE ...]` runs the same rules as a stored sweep.

A log has no steps, so its batch lines are split into steps:

* by time, when the client's steps carry wall-clock windows (a Plateau sweep's JSON): the
  host's clock and timezone need not match the client's, so the whole-quarter-hour offset that
  puts the most decode lines inside the windows is used;
* else by the requests the server held, `#running-req + #queue-req` (the offered concurrency as
  the scheduler sees it; with DP ranks, per rank x ranks): to the smallest client step that
  could have sent it (a closed loop at C never has more than C held), or, with no client, to
  bands of the held counts the lines report (held_bands: nothing rounded to a level the
  log does not show).

What a log does not print is never invented: a decode CUDA-graph ceiling or a running cap the
log does not state may be inferred from the batch lines (inferred_facts), and says so.
"""

from __future__ import annotations

import bisect
import re
import statistics
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from console.bench.models import StepResult
from console.diagnose.client_files import ClientSide
from console.diagnose.evidence import (
    batch_line,
    client_record,
    startup_facts,
)
from console.diagnose.models import (
    DecodePoint,
    KneeInfo,
    RunEvidence,
    StartupFacts,
    StepEvidence,
)
from console.diagnose.presence import pool_bound, span
from console.logs.crash_blocks import CRASH_NEEDLES, CrashBlocks
from console.sglang.batch import (
    DECODE_SHAPE,
    PREFILL_SHAPE,
    RETRACT_NEEDLES,
    batch_shape,
    is_batch_message,
    parse_batch,
    retracted_reqs,
)
from console.sglang.dp import NodeBatches
from console.sglang.prefix import (
    RANKS_DP,
    TIMESTAMP,
    dp_rank,
    is_sglang_line,
    parse_prefix,
    timestamp_seconds,
)
from console.sglang.server_args import SERVER_ARGS
from console.sglang.startup import KV_ALLOCATED
from console.sglang.warning_lines import WARNING_IDS

# Substrings of every line startup_facts reads (the rest of a long log is skipped unparsed):
# server_args, capture sizes (old and new wording), the sizing line, clamps, the MoE warning,
# the KV pool's size (the ladder's cost in KV tokens).
STARTUP_NEEDLES = (SERVER_ARGS, "Using default MoE", "apture", "max_total_num_tokens=",
                   "Max running requests is reset", " was reduced from ", KV_ALLOCATED)
NOTABLE = re.compile("|".join(re.escape(n) for n in (
    *STARTUP_NEEDLES, *RETRACT_NEEDLES, *WARNING_IDS, *CRASH_NEEDLES)))
# The bulk of a serving log, standard batch lines with the default prefix, read by one match
# per line over the whole text (as console/logs/scan_rows.py does for logscan); every other
# line takes (.*) and the general parsers. Groups: ts, dp, decode (running, usage, graph,
# rate, queue), prefill (new seqs, new tokens, usage, running, queue), other line.
_D = batch_shape(DECODE_SHAPE, ("running", "usage", "graph", "rate", "queue"))
_P = batch_shape(PREFILL_SHAPE, ("new_seq", "new_token", "usage", "running", "queue"))
LINES = re.compile(rf"\[({TIMESTAMP})(?: TP\d+|{RANKS_DP})\] ?(?:{_D}|{_P})\n|(.*)\n",
                   re.ASCII)
_EPOCH = datetime(1900, 1, 1)
_QUARTER = 900.0
_DAY = 86400.0
INFER_MIN_LINES = 3
INFER_QUEUE_SHARE = 0.1


Entry = tuple[bool, tuple[Any, ...], str | None, str]
"""(is decode, row as StepEvidence stores it, timestamp, DP rank or "")."""


@dataclass
class LogRead:
    """One pass over a log: its batch lines parsed, its other notable lines kept."""

    lines: int = 0
    batch: list[Entry] = field(default_factory=list)
    startup: list[str] = field(default_factory=list)
    marks: list[tuple[int, str, int]] = field(default_factory=list)
    """(batch entries before it, kind, count): retraction and warning lines."""
    rowless: dict[str, int] = field(default_factory=lambda: {"decode": 0, "prefill": 0})
    """Batch lines without the fields a row needs (`Prefill batch. #bid: 1, #cache_miss: 2`):
    counted as logscan counts them, never made into rows."""
    crash: CrashBlocks = field(default_factory=CrashBlocks)
    """The lines around each crash hint, for the crash finding (console/logs)."""
    sglang_lines: bool = False
    """Some line has a prefix SGLang (or its HTTP server, or a logging config around it)
    writes: the file is a server log even without batch or startup lines."""


def text_chunks(lines: Iterable[str], size: int = 20000) -> Iterator[str]:
    """Lines (without newlines) as newline-terminated text chunks, for read_log."""
    batch: list[str] = []
    for line in lines:
        batch.append(line)
        if len(batch) >= size:
            yield "\n".join(batch) + "\n"
            batch = []
    if batch:
        yield "\n".join(batch) + "\n"


def read_log(chunks: Iterable[str]) -> LogRead:
    """Parse a log's text once. `chunks` end at line ends. The bulk (standard batch lines)
    is read by the whole-log scanner's pattern (console/logs/scan_rows.py, the shapes of
    console/sglang/batch.py); every other line through console/sglang's general parsers."""
    read = LogRead()
    batch, startup, marks = read.batch, read.startup, read.marks
    count = 0
    append, notable, finditer = batch.append, NOTABLE.search, LINES.finditer
    ranks: dict[str | None, str] = {None: ""}
    crash = read.crash
    before = crash.before.append
    for chunk in chunks:
        for found in finditer(chunk):
            count += 1
            stamp, dp, run, use, graph, rate, queue, seqs, toks, p_use, p_run, p_queue, \
                line = found.groups()
            if crash.open:
                if line is None:  # a standard batch line ends any traceback, and the block
                    crash.close()
                else:
                    crash.add(count, line)
            if run is not None:
                rank = ranks.get(dp)
                if rank is None:
                    rank = ranks[dp] = "DP" + dp
                append((True, (int(run), int(queue), float(use), graph == "True",
                               float(rate)), stamp, rank))
            elif seqs is not None:
                append((False, (int(seqs), int(toks), int(p_run), int(p_queue),
                                float(p_use)), stamp, "" if dp is None else "DP" + dp))
            elif "batch" in line or notable(line) is not None:
                _slow_line(line, read, count)
            if line is not None:
                if not crash.open:
                    before((count, line))
                if not read.sglang_lines and is_sglang_line(line):
                    read.sglang_lines = True
    read.lines = count
    del batch, startup, marks
    return read


def _slow_line(line: str, read: LogRead, number: int) -> None:
    if not read.crash.open and read.crash.hint(line):
        read.crash.start(number, line)
    if "batch" in line:
        parsed = batch_line(line)
        if parsed is not None:
            decode, row, stamp, ranks = parsed
            read.batch.append((decode, row, stamp, dp_rank(ranks) if ranks else ""))
            return
        message = parse_prefix(line).message
        stats = parse_batch(message) if is_batch_message(message) else None
        if stats is not None:
            read.rowless[stats.kind] += 1
            return
    if any(needle in line for needle in STARTUP_NEEDLES):
        read.startup.append(line)
    if any(needle in line for needle in RETRACT_NEEDLES):
        read.marks.append((len(read.batch), "retract", retracted_reqs(line) or 0))
    for needle, ident in WARNING_IDS.items():
        if needle in line:
            read.marks.append((len(read.batch), ident, 0))


@dataclass(frozen=True)
class Split:
    """The steps a log was split into, and how."""

    how: str  # "windows" | "nearest-step" | "levels"
    steps: list[StepResult]  # for the knee (client steps, or the log's levels)
    evidence: list[StepEvidence]
    offset_s: float = 0.0  # windows: the log clock minus the client's local clock
    knee: KneeInfo | None = None  # levels: the knee of the log's own decode throughput
    notes: list[str] = field(default_factory=list)


def dp_ranks_of(read: LogRead) -> int:
    ranks = {dp for decode, _row, _ts, dp in read.batch if decode}
    ranks.discard("")
    return max(1, len(ranks))


def split_steps(read: LogRead, client: ClientSide | None) -> Split:
    if client is not None and client.windows:
        split = _by_windows(read, client)
        if split is not None:
            return split
    if client is not None:
        return _by_nearest(read, client)
    return _by_levels(read)


# ------------------------------------------------------------------------------ windows


def _local_seconds(unix: float) -> float:
    return (datetime.fromtimestamp(unix) - _EPOCH).total_seconds()


def _line_seconds(read: LogRead, time_only: bool) -> list[float | None]:
    out: list[float | None] = []
    for _decode, _row, stamp, _ranks in read.batch:
        value = timestamp_seconds(stamp) if stamp else None
        out.append(None if value is None else (value % _DAY if time_only else value))
    return out


def _by_windows(read: LogRead, client: ClientSide) -> Split | None:
    time_only = any(s is not None and len(s) <= 12 for _d, _r, s, _k in read.batch[:50])
    seconds = _line_seconds(read, time_only)
    windows = []
    for step in client.steps:
        start, end = _local_seconds(step.started_at), _local_seconds(step.finished_at)
        if time_only:
            start, end = start % _DAY, start % _DAY + (end - start)
        windows.append((start, end))
    decode_times = sorted(t for (d, *_), t in zip(read.batch, seconds, strict=True)
                          if d and t is not None)
    if not decode_times:
        return None
    offset = _best_offset(decode_times, windows)
    if offset is None:
        return None
    keys: list[int | None] = []
    for t in seconds:
        keys.append(None if t is None else _window_of(t - offset, windows))
    evidence = _group(read, keys, {i: s for i, s in enumerate(client.steps)})
    note = ("steps: the sweep's time windows" + (
        f", the log's clock {offset / 3600:+.2f} h from this machine's" if offset else ""))
    return Split("windows", client.steps, evidence, offset_s=offset, notes=[note])


def _best_offset(times: list[float], windows: list[tuple[float, float]]) -> float | None:
    """The log-clock offset (whole quarter hours, within a day) putting the most decode lines
    in the windows; 0 wins ties. None when no offset puts half the lines in a window."""
    def inside(offset: float) -> int:
        return sum(bisect.bisect_right(times, b + offset + 0.5) -
                   bisect.bisect_left(times, a + offset) for a, b in windows)

    best, best_count = 0.0, inside(0.0)
    for k in range(1, 57):
        for offset in (k * _QUARTER, -k * _QUARTER):
            count = inside(offset)
            if count > best_count:
                best, best_count = offset, count
    return best if best_count * 2 >= len(times) else None


def _window_of(t: float, windows: list[tuple[float, float]]) -> int | None:
    for index, (start, end) in enumerate(windows):
        if start <= t <= end + 0.5:
            return index
    return None


# ------------------------------------------------------------------------------ by level


def _demand(decode: bool, row: tuple[Any, ...]) -> int:
    """Requests the scheduler held: running + queued (+ the prefill's new ones)."""
    if decode:
        return int(row[0]) + int(row[1] or 0)
    return int(row[2]) + int(row[3] or 0) + int(row[0] or 0)


def _by_nearest(read: LogRead, client: ClientSide) -> Split:
    ranks = dp_ranks_of(read)
    targets = sorted({s.concurrency for s in client.steps if s.status == "ok"}) or sorted(
        {s.concurrency for s in client.steps})
    by_target = {c: next(s for s in client.steps if s.concurrency == c) for c in targets}
    keys: list[int | None] = []
    for decode, row, _stamp, _ranks in read.batch:
        held = max(1, _demand(decode, row) * ranks)
        # A closed-loop run at C never has the server hold more than C: the smallest run that
        # could have sent the line (above every run: the largest).
        keys.append(next((c for c in targets if c >= held), targets[-1]))
    evidence = _group(read, keys, {c: by_target[c] for c in targets})
    repeats = len(client.steps) - len(targets)
    notes = ["steps: each batch line goes to the smallest bench run whose concurrency covers "
             "its #running-req + #queue-req"
             + (f" x {ranks} DP ranks" if ranks > 1 else "")
             + " (bench_serving records carry no wall-clock time)"]
    if repeats > 0:
        notes.append(f"{repeats} repeated concurrency run(s) share their lines")
    return Split("nearest-step", client.steps, evidence, notes=notes)


BAND = 1.25  # held counts within 25% of a band's smallest go to that band


def held_bands(helds: Iterable[int]) -> dict[int, int]:
    """held count -> its band's label, the largest held count in the band. Bands are cut from
    the counts the log's lines report, nothing rounded: 11, 12, 13 are one band (13), 36 and
    46 two."""
    values = sorted(set(helds))
    out: dict[int, int] = {}
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] <= max(values[i] + 1, values[i] * BAND):
            j += 1
        for value in values[i:j + 1]:
            out[value] = values[j]
        i = j + 1
    return out


def _by_levels(read: LogRead) -> Split:
    helds = [max(1, _demand(d, row)) for d, row, _s, _r in read.batch]
    bands = held_bands(helds)
    keys: list[int | None] = [bands[h] for h in helds]
    levels = sorted(set(bands.values()))
    steps = {level: StepResult(index=i, concurrency=level, status="ok")
             for i, level in enumerate(levels)}
    evidence = _group(read, keys, steps, offered_known=False)
    note = ("steps: no client file, so batch lines are grouped by the requests each line "
            "reports held (#running-req + #queue-req), counts within a quarter of each other "
            "together; no level is invented and no knee is read from a log alone")
    return Split("levels", list(steps.values()), evidence, knee=log_knee(read), notes=[note])


def log_knee(read: LogRead) -> KneeInfo:
    """A log alone holds no sweep: no knee, and the sentence quotes the range of the log's own
    Decode lines (gen throughput and #running-req as printed)."""
    rows = [row for d, row, _s, _r in read.batch if d and row[4]]
    if not rows:
        return KneeInfo(kind="insufficient", sentence="no knee from a log alone (no sweep); "
                                                      "no Decode line with a gen throughput")
    rates = [float(r[4]) for r in rows]
    running = [int(r[0]) for r in rows]
    return KneeInfo(kind="insufficient", sentence=(
        f"no knee from a log alone (no sweep): gen throughput (token/s) "
        f"{min(rates):.2f}..{max(rates):.2f} over #running-req {min(running)}..{max(running)} "
        f"in {len(rows)} Decode lines"))


# ------------------------------------------------------------------------------ grouping


def _group(read: LogRead, keys: Sequence[int | None],
           steps: dict[int, StepResult], offered_known: bool = True) -> list[StepEvidence]:
    """StepEvidence per key, in the steps' order; warning and retraction lines go to the step
    of the batch line before them."""
    decode: dict[int, list[tuple[Any, ...]]] = {k: [] for k in steps}
    prefill: dict[int, list[tuple[Any, ...]]] = {k: [] for k in steps}
    stamps: dict[int, list[str]] = {k: [] for k in steps}
    nodes: dict[int, NodeBatches] = {k: NodeBatches() for k in steps}
    node_rows: dict[int, list[tuple[Any, ...]]] = {k: [] for k in steps}
    for (is_decode, row, stamp, dp), key in zip(read.batch, keys, strict=True):
        if key is None or key not in steps:
            continue
        (decode if is_decode else prefill)[key].append(row)
        if stamp:
            stamps[key].append(stamp)
        if dp and is_decode:
            running, queue, usage, graph, rate = row[:5]
            _add(node_rows[key], nodes[key].add(stamp, dp, running, queue, rate, usage, graph))
    retract: dict[int, list[int]] = {k: [0, 0] for k in steps}
    warnings: dict[int, list[str]] = {k: [] for k in steps}
    _attach_marks(read, keys, steps, retract, warnings)
    out = []
    for key, step in steps.items():
        _add(node_rows[key], nodes[key].flush())
        rank_count = sum(1 for k in nodes[key].tallies if k)
        started, finished = step.started_at, step.finished_at
        if not finished and stamps[key]:
            started, finished = _unix(stamps[key][0]), _unix(stamps[key][-1])
        # Rows are built typed above: construct without validating 10^5 tuples again.
        out.append(StepEvidence.model_construct(
            index=step.index, concurrency=step.concurrency, started_at=started,
            finished_at=finished, decode_rows=decode[key], prefill_rows=prefill[key],
            node_decode_rows=node_rows[key] if rank_count > 1 else [],
            dp_ranks=rank_count,
            retract_lines=retract[key][0], retracted_reqs=retract[key][1],
            log_lines=len(decode[key]) + len(prefill[key]), warnings=warnings[key],
            client=client_record(step), offered_known=offered_known))
    return out


def _attach_marks(read: LogRead, keys: Sequence[int | None], steps: dict[int, StepResult],
                  retract: dict[int, list[int]], warnings: dict[int, list[str]]) -> None:
    for before, kind, count in read.marks:
        at = before - 1
        key = keys[at] if at >= 0 else (keys[0] if keys else None)
        if key is None or key not in steps:
            continue
        if kind == "retract":
            retract[key][0] += 1
            retract[key][1] += count
        elif kind not in warnings[key]:
            warnings[key].append(kind)


def _add(rows: list[tuple[Any, ...]], sample: Any) -> None:
    if sample is not None:
        rows.append((sample.running, sample.queue, sample.token_usage, sample.cuda_graph,
                     sample.gen_throughput))


def _unix(stamp: str) -> float:
    """A log timestamp as unix seconds on this machine's clock (rules print it back as local
    time, so the log's own wall time is shown)."""
    seconds = timestamp_seconds(stamp)
    if seconds is None:
        return 0.0
    try:
        return (_EPOCH + timedelta(seconds=seconds)).timestamp()
    except (OverflowError, OSError, ValueError):
        return 0.0


# ------------------------------------------------------------------------------ inference


@dataclass(frozen=True)
class Inferred:
    """Facts the log does not print, read off its batch lines."""

    graph_ceiling: int | None = None  # the largest #running-req seen replaying a graph
    graph_eager_from: int | None = None  # the smallest seen eager, all above the ceiling
    running_cap: int | None = None
    notes: list[str] = field(default_factory=list)


def inferred_facts(read: LogRead, facts: StartupFacts) -> Inferred:
    rows = [row for decode, row, _s, _r in read.batch if decode]
    ceiling = eager_from = cap = None
    notes: list[str] = []
    known = [(r[0], r[3]) for r in rows if r[3] is not None]
    has_ceiling = facts.capture_bs or facts.cuda_graph_max_bs_decode is not None
    if known and not has_ceiling and not facts.decode_graph_disabled:
        graphed = [r for r, g in known if g]
        eager = [r for r, g in known if not g]
        if graphed and eager and min(eager) > max(graphed):
            # A clean split by batch size is how the captured ceiling shows (decode above
            # the largest captured bs runs eagerly: cuda_graph_runner.py `can_run`).
            ceiling, eager_from = max(graphed), min(eager)
            notes.append(f"no capture sizes in this log: the decode CUDA-graph ceiling is "
                         f"inferred from the batch lines: graphs at #running-req {ceiling} "
                         f"and below, eager at {eager_from} and above (the ceiling is at least "
                         f"{ceiling}, below {eager_from})")
    if facts.max_running_requests is None and len(rows) >= INFER_MIN_LINES:
        top = max(r[0] for r in rows)
        at_top = [r for r in rows if r[0] == top]
        queued = statistics.median(r[1] for r in at_top) if at_top else 0
        usages = [r[2] for r in at_top if r[2] is not None]
        points = [DecodePoint(*r) for r in at_top]
        if (top > 1 and len(at_top) >= INFER_MIN_LINES and 2 * len(at_top) >= len(rows)
                and queued >= max(2.0, INFER_QUEUE_SHARE * top)
                and usages and not any(pool_bound(p) for p in points)):
            # Requests wait while #running-req sits at one value and the KV pool has room
            # for more: the scheduler's cap (max_running_requests), which the log does not
            # print. A queue at a nearly full pool waits for the pool (kv-cache-full), and a
            # queue of a request or two is arrival churn at a closed-loop client's
            # concurrency, not a cap: the queue must be a tenth of the batch.
            cap = top
            notes.append(f"no max_running_requests line in this log: a cap of {top} is "
                         f"inferred ({len(at_top)} of {len(rows)} Decode lines hold exactly "
                         f"{top} running with #queue-req {span(r[1] for r in at_top)} and "
                         f"token usage {span(usages, '{:.2f}')}, room in the pool)")
    return Inferred(graph_ceiling=ceiling, graph_eager_from=eager_from, running_cap=cap,
                    notes=notes)


def with_inferred(facts: StartupFacts, inferred: Inferred) -> StartupFacts:
    update: dict[str, Any] = {}
    if inferred.graph_ceiling is not None:
        update["cuda_graph_max_bs_decode"] = inferred.graph_ceiling
    if inferred.running_cap is not None:
        update["max_running_requests"] = inferred.running_cap
    return facts.model_copy(update=update) if update else facts


def log_evidence(read: LogRead, split: Split) -> tuple[RunEvidence, Inferred]:
    facts = startup_facts(read.startup)
    inferred = inferred_facts(read, facts)
    sources = ["log"] + (["client"] if any(e.client for e in split.evidence) else [])
    evidence = RunEvidence(steps=split.evidence, startup=with_inferred(facts, inferred),
                           sources=sources, split_from_log=True)
    return evidence, inferred
