"""Launches in a whole-log scan: startup phases, what SGLang resolved, how each launch ended.

Startup lines are read by console/sglang/startup.py and server_args.py (every release's
wording); this module keeps the per-launch state. Weight loading is per TP rank: the phase is
the slowest rank's (SGLang's own `elapsed=` when printed), and KV allocation starts after the
LAST rank finished loading, so a slow rank is never counted as KV allocation.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from console.logs.crash_finding import FATAL_IDS
from console.logs.models import LogEvent
from console.sglang.launch_log import HTTP_UP
from console.sglang.prefix import parse_timestamp
from console.sglang.server_args import (
    decode_graph_ceiling,
    decode_graph_disabled,
    parse_server_args,
    server_args_form,
)
from console.sglang.startup import CaptureSizes, StartupLine, parse_sizing, parse_startup

_SIZING_AT = "max_total_num_tokens="


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
    server_args_form: str | None = None
    """`dict` (`server_args={...}`, 0.5.2x) or `dataclass` (`server_args=ServerArgs(...)`)."""
    capture_wording: str | None = None
    """`old` (`Capture cuda graph begin`) or `new` (`Capture target decode CUDA graph begin`)."""
    captured_decode_bs: list[int] | None = None
    """The decode CUDA-graph batch sizes the log shows were captured (begin, end or bs lines,
    or tqdm bars for every size); None when the log shows only some of them."""
    captured_decode_count: int | None = None
    """How many decode sizes were captured (the list's length, or the tqdm bars' `/N`)."""
    captured_decode_seen: list[int] | None = None
    """The sizes the log prints, when it does not print them all (the last tqdm bar only)."""
    decode_graph_ceiling: int | None = None
    """The largest decode graph: captured sizes, else what server_args asked for."""
    cuda_graph_disabled: bool | None = None
    max_running_requests: int | None = None
    """Effective (the scheduler's sizing line, or a clamp's result)."""
    max_running_requests_requested: int | None = None
    """What was asked for, when a clamp line shows it was reduced."""
    max_total_num_tokens: int | None = None
    kv_allocated_tokens: int | None = None
    """`KV Cache is allocated. #tokens: N`: the pool's size as the allocator printed it."""
    chunked_prefill_size: int | None = None
    """Effective (the sizing line), else server_args'."""
    chunked_prefill_size_requested: int | None = None
    """server_args' value, when the sizing line then printed another (SGLang resolved it)."""
    decode_graph_requested: int | None = None
    """server_args' decode graph max bs, when the captured sizes then ended elsewhere."""


class LaunchState:
    def __init__(self, index: int, event: LogEvent) -> None:
        self.launch = Launch(index=index, start_line=event.seq + 1,
                             start_timestamp=event.timestamp)
        # Opened by its `server_args=` line, or implicitly by the file's first timestamped
        # line (a log that begins mid-launch).
        self.from_args = server_args_form(event.message) is not None
        self.served = False  # saw batch or access lines: a running server, not a preamble
        self.marks: dict[str, tuple[int, str | None]] = {}
        self.elapsed: dict[str, float] = {}
        self.weights_elapsed: dict[str, float] = {}  # rank prefix -> its load seconds
        self.graph_elapsed: dict[str, float] = {}  # rank prefix -> its capture seconds
        self.sizes = CaptureSizes()
        self.asked_chunked: int | None = None  # server_args' values, for requested -> effective
        self.asked_graph: int | None = None

    def mark(self, key: str, event: LogEvent, *, last: bool = False) -> None:
        if last or key not in self.marks:
            self.marks[key] = (event.seq + 1, event.timestamp)

    def server_args(self, message: str) -> None:
        launch = self.launch
        launch.server_args_form = server_args_form(message)
        args = parse_server_args(message)
        if args is None:
            return
        launch.cuda_graph_disabled = decode_graph_disabled(args)
        if launch.decode_graph_ceiling is None:
            launch.decode_graph_ceiling = decode_graph_ceiling(args)
        asked = args.get("max_running_requests")  # server-wide; the sizing line is per DP rank
        if isinstance(asked, int) and not isinstance(asked, bool):
            launch.max_running_requests_requested = asked
        chunked = args.get("chunked_prefill_size")
        if isinstance(chunked, int) and not isinstance(chunked, bool):
            launch.chunked_prefill_size = chunked
            self.asked_chunked = chunked
        self.asked_graph = decode_graph_ceiling(args)

    def startup(self, line: StartupLine, event: LogEvent) -> None:
        kind = line.kind
        launch = self.launch
        if kind == "weights_begin":
            self.mark("weights_begin", event)
        elif kind == "weights_end":
            self.mark("weights_end", event, last=True)  # the slowest rank's
            if line.elapsed is not None:
                self.weights_elapsed[event.ranks] = line.elapsed
                self.elapsed["load weights"] = max(self.weights_elapsed.values())
        elif kind in ("kv_allocated", "memory_pool_end"):
            self.mark("kv_end", event, last=True)
            if "tokens" in line.values:
                launch.kv_allocated_tokens = int(line.values["tokens"])
        elif kind in ("capture_begin", "capture_end", "capture_sizes"):
            self._capture(line, event)
        elif kind == "sizing":
            self.mark("scheduler_ready", event)
            values = line.values
            for key in ("max_total_num_tokens", "max_running_requests", "chunked_prefill_size"):
                if key in values:
                    setattr(launch, key, int(values[key]))
        elif kind == "clamp" and line.name == "max_running_requests":
            if "requested" in line.values:
                launch.max_running_requests_requested = int(line.values["requested"])
            launch.max_running_requests = int(line.values["effective"])
        elif kind == "engine_timings":
            launch.engine_timings = dict(line.values)
            # The server's own measure of the allocation beats the span between two lines
            # stamped to the second: a 0.20 s allocation read 0.00 s (issue 26.11). The line is
            # SGLang 0.5.x's entrypoints/engine.py startup summary (console/sglang/startup.py).
            if "kv_cache_allocation" in line.values:
                self.elapsed.setdefault("KV cache allocation",
                                        line.values["kv_cache_allocation"])

    def _capture(self, line: StartupLine, event: LogEvent) -> None:
        launch = self.launch
        if line.wording and launch.capture_wording is None:
            launch.capture_wording = line.wording
        if self.sizes.add(line):
            sizes = self.sizes
            launch.captured_decode_bs = sizes.sizes
            launch.captured_decode_count = sizes.count
            launch.captured_decode_seen = sorted(sizes.listed | sizes.barred)
            if sizes.ceiling is not None:
                launch.decode_graph_ceiling = sizes.ceiling
        if line.kind == "capture_begin":
            self.mark("graph_begin", event)
        elif line.kind == "capture_end":
            self.mark("graph_end", event, last=True)
            if line.elapsed is not None:
                # Every rank captures at the same time: sum a rank's captures (prefill, then
                # decode graphs), never the ranks' (8 ranks of 1.2 s are 1.2 s of startup).
                per_rank = self.graph_elapsed
                per_rank[event.ranks] = per_rank.get(event.ranks, 0.0) + line.elapsed
                self.elapsed["CUDA graph capture"] = round(max(per_rank.values()), 3)

    def milestone(self, event: LogEvent) -> None:
        """Readiness, fatal errors and shutdown (catalogue ids), and the HTTP server."""
        launch = self.launch
        if event.message.startswith(HTTP_UP):
            self.mark("http_up", event)
        elif event.catalogue_id == "server-ready" and launch.outcome == "unknown":
            launch.outcome = "ready"
            launch.ready_line = event.seq + 1
            launch.ready_timestamp = event.timestamp
        elif event.catalogue_id in FATAL_IDS and launch.outcome in ("unknown", "ready"):
            launch.outcome = "failed"
            launch.fatal = event.catalogue_id
        elif event.catalogue_id == "sigterm-draining" and launch.outcome in ("unknown", "ready"):
            launch.outcome = "stopped"

    def is_preamble(self) -> bool:
        """Opened implicitly and has seen nothing of a server yet."""
        return not (
            self.from_args
            or self.served
            or self.marks
            or self.launch.outcome != "unknown"
            or self.launch.engine_timings
        )


def feed_launch(state: LaunchState, event: LogEvent) -> None:
    """One non-batch event of the open launch."""
    message = event.message
    if server_args_form(message) is not None:
        state.server_args(message)
        return
    line = parse_startup(message)
    if line is not None:
        state.startup(line, event)
        if line.kind != "sizing" and _SIZING_AT in message:  # two lines pasted as one
            sizing = parse_sizing(message)
            if sizing is not None:
                state.startup(sizing, event)
    state.milestone(event)


def finish_launch(state: LaunchState) -> Launch:
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
        # SGLang's own figure stands without its begin line (`Capture cuda graph end. Time
        # elapsed: 391.00 s` in an excerpt that starts there): anchored at the end line.
        anchor = begin or end
        if name in state.elapsed and anchor is not None and anchor[0] is not None:
            launch.phases.append(StartupPhase(name=name, seconds=state.elapsed[name],
                                              start_line=anchor[0], source="elapsed"))
            continue
        seconds = _seconds_between(begin, end)
        if seconds is not None and begin is not None:
            launch.phases.append(StartupPhase(name=name, seconds=seconds, start_line=begin[0]))
    launch.startup_seconds = next((p.seconds for p in launch.phases if p.name == "total"), None)
    # Requested -> effective: SGLang resolves these after printing server_args (the sizing
    # line, the captured sizes; console/sglang/effective.py).
    if state.asked_chunked is not None and launch.chunked_prefill_size != state.asked_chunked:
        launch.chunked_prefill_size_requested = state.asked_chunked
    if (state.asked_graph is not None and launch.captured_decode_bs
            and max(launch.captured_decode_bs) != state.asked_graph):
        launch.decode_graph_requested = state.asked_graph
    return launch


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
    return parse_timestamp(value)
