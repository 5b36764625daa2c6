"""The decode CUDA-graph ladder against the traffic, from a log (or live batch lines).

What a log holds, and nothing else (console/sglang/startup.py and batch.py read every
release's wording):

* the ladder: the decode sizes a capture line prints (`Capture cuda graph bs [...]`, `bs=[...]`
  on the new per-phase begin or end line, tqdm bars for every size); the verify width
  (`num_tokens_per_req=`) under speculative decoding;
* the traffic: one `Decode batch` line every `--decode-log-interval` steps (40 by default),
  each a sample of the batch (`#running-req`) and of whether that step ran a graph
  (`cuda graph: True/False`, `cpu`/`npu graph` on other devices; absent before 0.4, then
  unknown, never "off");
* the graph memory: `avail mem=` on the capture's begin and end lines, `mem usage=` on the
  end line; the KV pool's GB per token from `KV Cache is allocated. #tokens: N, K size: ..`.

Padding follows SGLang (console/sglang/graph_ladder.py): a batch runs the smallest captured
size at or above it; the waste is that size minus the batch, over the decode lines that fit.
The eager penalty and the proposal are console/logs/ladder_plan.py's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from console.logs.scan_rows import (
    D_ALEN,
    D_GEN,
    D_GRAPH,
    D_RUN,
    DECODE_MARK,
    PREFILL_MARK,
    RAW,
    ROWS,
    TS,
    Row,
)
from console.sglang.batch import DECODE_BATCH, PREFILL_BATCH, is_batch_message, parse_batch
from console.sglang.graph_ladder import padded_size
from console.sglang.prefix import parse_prefix
from console.sglang.startup import (
    KV_ALLOCATED,
    CaptureSizes,
    StartupLine,
    is_decode_phase,
    parse_startup,
)

# Substrings of every line the ladder reads; the rest of a log is skipped unparsed.
_NEEDLES = re.compile("|".join(re.escape(n) for n in (
    DECODE_BATCH, PREFILL_BATCH, KV_ALLOCATED, "aptur", "max_total_num_tokens=",
    "Max running requests is reset", " was reduced from ")))
_MAX_SAMPLES = 200_000


class LadderBin(BaseModel):
    """Decode lines at one batch size (requests), and the graph they ran."""

    batch: int
    lines: int
    graph: int = 0
    """Lines that say `cuda graph: True`."""
    eager: int = 0
    """Lines that say `cuda graph: False`."""
    runs: int | None = None
    """The captured size this batch pads to; None above the ladder (eager by the ladder)."""


class GraphMemory(BaseModel):
    """The decode capture's memory and time, as its lines print them (first rank that wrote
    them)."""

    mem_gb: float | None = None
    """`mem usage=` on the end line, else begin's `avail mem` minus end's."""
    avail_before_gb: float | None = None
    avail_after_gb: float | None = None
    capture_s: float | None = None
    """The decode capture's own `elapsed=` / `Time elapsed:`."""
    per_size_gb: float | None = None
    """mem_gb over the captured count: a mean, not a per-size measure."""
    kv_gb_per_token: float | None = None
    """The KV pool's GB over its `#tokens`, from the first `KV Cache is allocated` line."""
    kv_tokens: int | None = None
    """The KV tokens mem_gb would otherwise hold."""


class EagerPenalty(BaseModel):
    measured: bool = False
    ratio: float | None = None
    """The median over the eager lines of their step time over the graph step time at their
    batch."""
    ratio_low: float | None = None
    ratio_high: float | None = None
    """The 10th and 90th percentiles of those per-line ratios (the middle 80 % of the eager
    lines): the spread the prediction carries."""
    graph_step_ms: float | None = None
    eager_step_ms: float | None = None
    graph_fit_s: tuple[float, float] | None = None
    """(intercept, slope per request) of the graph step seconds the ratios were taken
    against; slope 0 when the graph lines hold one batch size."""
    graph_samples: int = 0
    eager_samples: int = 0
    graph_batches: tuple[int, int] | None = None
    eager_batches: tuple[int, int] | None = None
    how: str = ""
    """`same batch` or `either side of the ceiling`; why not, when not measured."""


class GainAt(BaseModel):
    """The predicted throughput gain at one batch size the proposal moves onto graphs: its
    Decode lines' intervals (prefill included) with only their decode steps sped up."""

    batch: int
    lines: int
    gain: float
    low: float
    high: float


class LadderProposal(BaseModel):
    sizes: list[int]
    added: list[int]
    flags: list[str]
    """In the host version's names (`--cuda-graph-bs-decode` / `--cuda-graph-bs`)."""
    change: dict[str, int]
    """The one-flag change a launch profile can hold (its values are single words):
    `cuda-graph-max-bs-decode: N` (`cuda-graph-max-bs` before 0.5.18), SGLang's default ladder
    up to N; `change_is_sizes` says whether that is exactly `sizes`."""
    change_is_sizes: bool = True
    version_basis: str
    target: int
    """The largest batch the proposal means to cover (the log's largest)."""
    ceiling: int
    covered_lines: int
    coverage: float
    moved_lines: int
    """Decode lines that said `cuda graph: False` and the new ladder covers."""
    padding_waste: float | None = None
    memory_gb: float | None = None
    """Estimated (see the module's words); None without a measured capture."""
    memory_budget_gb: float | None = None
    budget_rule: str = ""
    kv_tokens_cost: int | None = None
    """KV tokens the added graph memory would otherwise hold."""
    capture_s: float | None = None
    predicted_step_gain: float | None = None
    """Eager steps the ladder moves run this much faster (penalty - 1); None unmeasured."""
    predicted_step_gain_range: tuple[float, float] | None = None
    """The same from the penalty's 10th..90th percentile lines."""
    predicted_gain_at: list[GainAt] = Field(default_factory=list)
    predicted_decode_gain: float | None = None
    """Over the log's decode time: saved time on moved lines over the rest (None unmeasured)."""
    notes: list[str] = Field(default_factory=list)


class Ladder(BaseModel):
    """The decode batch-size picture of one launch (the last one with Decode lines)."""

    decode_lines: int = 0
    lines_with_graph_field: int = 0
    graph_lines: int = 0
    eager_lines: int = 0
    graph_share: float | None = None
    """Decode lines on graphs over those with a graph field; None without one."""
    ladder: list[int] | None = None
    """The captured decode sizes; None when no capture line prints them all."""
    ceiling: int | None = None
    tokens_per_req: int | None = None
    """Tokens each request puts in a verify graph (`num_tokens_per_req=`), speculative only."""
    speculative: bool = False
    """Decode lines carry `accept len`."""
    histogram: list[LadderBin] = Field(default_factory=list)
    max_batch: int | None = None
    covered_lines: int = 0
    """Decode lines whose batch is at or below the ceiling (a graph by the ladder)."""
    coverage: float | None = None
    """covered_lines over decode_lines; None without a ladder."""
    padding_slots: int = 0
    """Sum over covered lines of (captured size run - batch): request slots computed for
    nothing."""
    padded_slots: int = 0
    """Sum over covered lines of the captured size run."""
    padding_waste: float | None = None
    """padding_slots over padded_slots; None when no line is covered."""
    memory: GraphMemory | None = None
    max_running_requests: int | None = None
    capture_wording: str | None = None
    kv_pool_tokens: int | None = None
    """`KV Cache is allocated. #tokens: N` (the first such line: the target model's pool)."""
    penalty: EagerPenalty | None = None
    proposal: LadderProposal | None = None
    notes: list[str] = Field(default_factory=list)


@dataclass(slots=True)
class StepSample:
    """A Decode line whose throughput is a rate: its batch, step seconds and graph state."""

    batch: int
    step_s: float
    graph: bool | None
    clean: bool = True
    """No Prefill line since the previous Decode line: the interval's time is decode steps
    only (a prefill in it inflates the step time, more for a fast graph step than an eager
    one). The first Decode line after an idle spell is never clean: work arrives as a
    Prefill line first, and that line's window spans the idle time (console/logs/
    decode_rate.py says why it is no rate)."""


@dataclass
class _Launch:
    sizes: CaptureSizes = field(default_factory=CaptureSizes)
    sizes_rank: str | None = None
    """The ranks prefix that printed the sizes (TP0 alone prints them)."""
    begins: dict[str, float] = field(default_factory=dict)
    """ranks -> `avail mem=` of its decode capture's begin line."""
    ends: dict[str, StartupLine] = field(default_factory=dict)
    """ranks -> its decode capture's end line, in the order the ranks wrote them."""
    tokens_per_req: int | None = None
    wording: str | None = None
    kv: dict[str, float] | None = None
    max_running: int | None = None
    bins: dict[int, list[int]] = field(default_factory=dict)
    """batch -> [lines, graph, eager]."""
    samples: list[StepSample] = field(default_factory=list)
    raw_samples: list[tuple[int, float, bool, bool]] = field(default_factory=list)
    """Rows' samples as tuples (batch, step s, graph, clean): made StepSamples
    only when asked (a tuple per line costs less than an object in logscan's loop)."""
    decode_lines: int = 0
    speculative: bool = False


class LadderReader:
    """Feed a log's lines (or text chunks) in order, then `result()`."""

    def __init__(self) -> None:
        self._launch = _Launch()
        self._done: _Launch | None = None
        self._prefill_since = True  # the first interval began before the log

    def feed_text(self, text: str) -> None:
        """Whole lines of a log, `\\n`-separated. The standard batch lines (the bulk of a log)
        are read by one regex call per chunk (console/logs/scan_rows.py, as logscan reads
        them); the other lines only when they hold what the ladder reads."""
        if text and not text.endswith("\n"):
            text += "\n"
        self.feed_rows(ROWS.findall(text))

    def feed_rows(self, rows: Sequence[Row]) -> None:
        """Lines as scan_rows.ROWS read them (logscan hands over the rows it read). The loop
        keeps its state in locals (batch lines are most of a log): what add_decode does."""
        launch = self._launch
        bins, raw_samples = launch.bins, launch.raw_samples
        room = _MAX_SAMPLES - len(raw_samples)
        prefill_since = self._prefill_since
        added = 0
        spec = False
        for row in rows:
            if row[DECODE_MARK]:
                clean = not prefill_since
                prefill_since = False
                run = int(row[D_RUN])
                if run <= 0:
                    continue
                added += 1
                counts = bins.get(run)
                if counts is None:
                    counts = bins[run] = [0, 0, 0]
                counts[0] += 1
                graph = row[D_GRAPH] == "True"
                counts[1 if graph else 2] += 1
                alen = row[D_ALEN]
                if alen:
                    spec = True
                gen = float(row[D_GEN])
                if gen > 0 and room > 0:
                    room -= 1
                    raw_samples.append((run, (run * float(alen) if alen else run) / gen,
                                        graph, clean))
            elif row[PREFILL_MARK]:
                prefill_since = True
            elif not row[TS] and _NEEDLES.search(row[RAW]):
                self._prefill_since = prefill_since
                launch.decode_lines += added  # a capture line after served lines: new launch
                added = 0
                self.feed_line(row[RAW])
                prefill_since = self._prefill_since
                if self._launch is not launch:  # a capture line opened a new launch
                    launch = self._launch
                    bins, raw_samples = launch.bins, launch.raw_samples
                    room = _MAX_SAMPLES - len(raw_samples)
        self._prefill_since = prefill_since
        launch.decode_lines += added
        launch.speculative = launch.speculative or spec

    def feed_lines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.feed_line(line)

    def feed_line(self, line: str) -> None:
        prefix = parse_prefix(line)
        message = prefix.message
        if is_batch_message(message):
            self._batch(message)
            return
        startup = parse_startup(message)
        if startup is not None:
            self._startup(startup, prefix.ranks)

    def _batch(self, message: str) -> None:
        stats = parse_batch(message)
        if stats is None:
            return
        if stats.kind == "prefill":
            self._prefill_since = True
            return
        clean, self._prefill_since = not self._prefill_since, False
        if stats.running_reqs is not None:
            self.add_decode(stats.running_reqs, stats.cuda_graph, stats.gen_throughput,
                            stats.accept_len, clean=clean)

    def add_decode(self, batch: int, graph: bool | None, gen: float | None,
                   accept_len: float | None = None, *, rate: bool = True,
                   clean: bool = False) -> None:
        """One Decode line's facts (from its text, or as a stored run keeps them)."""
        if batch <= 0:
            return
        launch = self._launch
        launch.decode_lines += 1
        counts = launch.bins.setdefault(batch, [0, 0, 0])
        counts[0] += 1
        if graph is True:
            counts[1] += 1
        elif graph is False:
            counts[2] += 1
        if accept_len is not None:
            launch.speculative = True
        if rate and gen and gen > 0 and len(launch.samples) < _MAX_SAMPLES:
            # gen throughput is the tokens of the interval over its seconds
            # (metrics_reporter.py:942-944); a step makes batch x accept len tokens.
            tokens = batch * (accept_len or 1.0)
            launch.samples.append(StepSample(batch, tokens / gen, graph, clean))

    def set_capture(self, sizes: list[int], *, wording: str | None = None,
                    mem_gb: float | None = None, capture_s: float | None = None,
                    kv_gb: float | None = None, kv_tokens: int | None = None,
                    max_running: int | None = None) -> None:
        """The capture facts a stored run keeps (console.diagnose StartupFacts), instead of
        its startup lines."""
        launch = self._launch
        launch.sizes.listed.update(sizes)
        launch.wording = wording
        launch.max_running = max_running
        if mem_gb is not None or capture_s is not None:
            values = {} if mem_gb is None else {"mem_gb": mem_gb}
            launch.ends[""] = StartupLine("capture_end", elapsed=capture_s, values=values)
        if kv_gb is not None and kv_tokens:
            launch.kv = {"kv_gb": kv_gb, "tokens": float(kv_tokens)}

    def _startup(self, line: StartupLine, ranks: str) -> None:
        if line.kind == "kv_allocated" and self._launch.kv is None and "kv_gb" in line.values:
            self._launch.kv = dict(line.values)
        elif line.kind in ("sizing", "clamp"):
            key = "max_running_requests" if line.kind == "sizing" else "effective"
            if (line.kind == "sizing" or line.name == "max_running_requests") \
                    and key in line.values:
                self._launch.max_running = int(line.values[key])
        elif line.kind in ("capture_begin", "capture_end", "capture_sizes"):
            self._capture(line, ranks)

    def _capture(self, line: StartupLine, ranks: str) -> None:
        if not is_decode_phase(line.phase):
            return
        launch = self._launch
        if launch.decode_lines and line.kind != "capture_sizes":
            self._done, launch = launch, _Launch()  # a new launch after one that served
            self._launch = launch
        if (launch.sizes_rank is None or ranks == launch.sizes_rank) and launch.sizes.add(line):
            launch.sizes_rank = ranks
        if line.wording:
            launch.wording = launch.wording or line.wording
        if "tokens_per_req" in line.values and line.values["tokens_per_req"] > 1:
            launch.tokens_per_req = int(line.values["tokens_per_req"])
        if line.kind == "capture_begin" and "avail_gb" in line.values:
            launch.begins.setdefault(ranks, line.values["avail_gb"])
        elif line.kind == "capture_end":
            launch.ends.setdefault(ranks, line)

    def samples(self) -> list[StepSample]:
        launch = self._chosen()
        return [*launch.samples, *(StepSample(b, t, g, c) for b, t, g, c in
                                   launch.raw_samples)]

    def _chosen(self) -> _Launch:
        launch = self._launch
        if not launch.decode_lines and self._done is not None:
            return self._done
        return launch

    def result(self) -> Ladder:
        return ladder_of(self._chosen())


def ladder_of(launch: _Launch) -> Ladder:
    sizes = launch.sizes.sizes
    ladder = sorted(sizes) if sizes else None
    out = Ladder(decode_lines=launch.decode_lines, ladder=ladder,
                 ceiling=launch.sizes.ceiling, tokens_per_req=launch.tokens_per_req,
                 speculative=launch.speculative, max_running_requests=launch.max_running,
                 capture_wording=launch.wording)
    for batch in sorted(launch.bins):
        lines, graph, eager = launch.bins[batch]
        out.histogram.append(LadderBin(batch=batch, lines=lines, graph=graph, eager=eager,
                                       runs=padded_size(batch, ladder) if ladder else None))
        out.graph_lines += graph
        out.eager_lines += eager
    out.lines_with_graph_field = out.graph_lines + out.eager_lines
    if out.lines_with_graph_field:
        out.graph_share = out.graph_lines / out.lines_with_graph_field
    if out.histogram:
        out.max_batch = out.histogram[-1].batch
    if ladder:
        for row in out.histogram:
            if row.runs is not None:
                out.covered_lines += row.lines
                out.padding_slots += (row.runs - row.batch) * row.lines
                out.padded_slots += row.runs * row.lines
        if out.decode_lines:
            out.coverage = out.covered_lines / out.decode_lines
        if out.padded_slots:
            out.padding_waste = out.padding_slots / out.padded_slots
    elif out.ceiling is not None:
        out.notes.append(f"the log shows the largest captured size ({out.ceiling}) but not "
                         "every size: padding is not computed")
    out.memory = _memory(launch, out)
    if launch.kv is not None and launch.kv.get("tokens"):
        out.kv_pool_tokens = int(launch.kv["tokens"])
    return out


def _memory(launch: _Launch, ladder: Ladder) -> GraphMemory | None:
    """The figures of the rank that printed the sizes when it printed its end line, else of
    the first rank that did (every rank captures the same sizes)."""
    rank = launch.sizes_rank
    if rank not in launch.ends:
        rank = next(iter(launch.ends), rank)
    end = launch.ends.get(rank or "")
    begin = launch.begins.get(rank or "")
    if end is None and begin is None:
        return None
    memory = GraphMemory(avail_before_gb=begin)
    if end is not None:
        memory.avail_after_gb = end.values.get("avail_gb")
        memory.mem_gb = end.values.get("mem_gb")
        memory.capture_s = end.elapsed
    if memory.mem_gb is None and memory.avail_before_gb is not None \
            and memory.avail_after_gb is not None:
        memory.mem_gb = round(memory.avail_before_gb - memory.avail_after_gb, 3)
    count = launch.sizes.count
    if memory.mem_gb is not None and count:
        memory.per_size_gb = memory.mem_gb / count
    kv = launch.kv
    if kv is not None and kv.get("tokens"):
        memory.kv_gb_per_token = kv["kv_gb"] / kv["tokens"]
        if memory.mem_gb is not None:
            memory.kv_tokens = int(memory.mem_gb / memory.kv_gb_per_token)
    return memory
