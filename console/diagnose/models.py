"""Typed evidence a run keeps for its diagnosis, and the diagnosis itself.

Evidence is stored with the run (store/db.py `evidence` table), so a run can be diagnosed
again after its server is gone. Everything here is plain data: numbers the rules compare,
each sample stamped with the unix time it was taken.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict

from console.logs.ladder import Ladder


class Frozen(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class DecodePoint(NamedTuple):
    """One `Decode batch` line."""

    running: int
    queue: int
    token_usage: float | None = None
    cuda_graph: bool | None = None
    gen_throughput: float | None = None
    prealloc: int = 0
    """`#prealloc-req` (PD decode nodes): waiting for decode KV, outside `queue`."""


DecodeRow = (tuple[int, int, float | None, bool | None, float | None]
             | tuple[int, int, float | None, bool | None, float | None, int])
"""A DecodePoint as stored; the sixth field (#prealloc-req) only on PD decode nodes' lines."""


class PrefillPoint(NamedTuple):
    """One `Prefill batch` line."""

    new_seq: int
    new_token: int
    running: int
    queue: int
    token_usage: float | None = None


class MetricsPoint(Frozen):
    """One `/metrics` scrape, names normalised to the `sglang:` prefix."""

    t: float
    values: dict[str, float]


class GpuPoint(Frozen):
    """One GPU's reading in one agent sample."""

    t: float
    index: int
    util: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    sm_clock_mhz: float | None = None
    sm_clock_max_mhz: float | None = None
    temp_c: float | None = None
    reasons: list[str] = []
    pcie_bytes_s: float | None = None  # tx + rx


class ClientRecord(Frozen):
    """What the load generator saw in one step."""

    target: int
    num_prompts: int | None = None
    completed: int = 0
    measured_concurrency: float | None = None
    client_cpu_max: float | None = None
    client_warning: str | None = None
    itl_p50_ms: float | None = None
    itl_p99_ms: float | None = None
    itl_mean_ms: float | None = None
    tpot_mean_ms: float | None = None
    ttft_p50_ms: float | None = None
    steady_reached: bool | None = None  # None: measured without a steady-state check
    steady_window_s: float | None = None  # the longest span at >= ratio x concurrency
    step_s: float | None = None  # first request's start to last request's end
    total_tok_s: float | None = None
    output_tok_s: float | None = None
    duration_s: float | None = None


class StepEvidence(Frozen):
    """Everything seen during one sweep step's window [started_at, finished_at]."""

    index: int
    concurrency: int
    started_at: float
    finished_at: float
    # One row per batch line, stored as plain lists (tens of thousands per step stay cheap).
    decode_rows: list[DecodeRow] = []
    prefill_rows: list[tuple[int, int, int, int, float | None]] = []
    # With 2+ DP ranks: decode_rows hold each rank's lines (caps and graph ceilings are per
    # rank); these hold the node, the ranks summed per timestamp (console/sglang/dp.py).
    node_decode_rows: list[tuple[int, int, float | None, bool | None, float | None]] = []
    dp_ranks: int = 0
    retract_lines: int = 0
    retracted_reqs: int = 0
    log_lines: int = 0  # SGLang lines read in the window (all kinds)
    # False: a log's lines grouped by what they hold, not a level anyone offered (no sweep):
    # `concurrency` is then the band's largest #running-req + #queue-req, never said as load.
    offered_known: bool = True
    warnings: list[str] = []  # catalogue ids of warning lines in the window
    metrics: list[MetricsPoint] = []
    gpu: list[GpuPoint] = []
    client: ClientRecord | None = None

    @cached_property
    def decode(self) -> list[DecodePoint]:
        return [DecodePoint(*row) for row in self.decode_rows]

    @cached_property
    def prefill(self) -> list[PrefillPoint]:
        return [PrefillPoint(*row) for row in self.prefill_rows]


class StartupFacts(Frozen):
    """What the server said about itself when it started (log lines and /server_info)."""

    tp_size: int | None = None
    capture_bs: list[int] = []  # `Capture ... decode CUDA graph end. bs=[...]`
    decode_graph_disabled: bool = False
    max_running_requests: int | None = None
    running_cap_reduced_from: int | None = None  # "max_running_requests was reduced from ..."
    max_total_num_tokens: int | None = None
    chunked_prefill_size: int | None = None
    moe_untuned_warning: str | None = None  # the "Using default MoE kernel config" line
    moe_runner_backend: str | None = None
    quantization: str | None = None
    kv_cache_dtype: str | None = None
    cuda_graph_max_bs_decode: int | None = None
    disable_custom_all_reduce: bool | None = None
    enable_mixed_chunk: bool | None = None
    mem_fraction_static: float | None = None
    sglang_version: str | None = None  # /server_info "version": suggestions use its flag names
    max_total_tokens: int | None = None  # server_args' explicit --max-total-tokens (a cap)
    num_layers: int | None = None  # the model's hidden layers, when the server said
    # The decode capture's own figures (its end line's `mem usage=` and seconds), the KV pool's
    # GB and tokens (`KV Cache is allocated`) and the capture wording: the ladder's cost
    # (console/logs/ladder.py).
    graph_mem_gb: float | None = None
    graph_capture_s: float | None = None
    kv_pool_gb: float | None = None
    kv_pool_tokens: int | None = None
    capture_wording: str | None = None
    # The layout (issue 39): DP replicas, attention-DP groups; the first weight lines' facts
    dp_size: int | None = None
    attn_dp_size: int | None = None
    architecture: str | None = None  # `Load weight end. ..., type=X`
    weights_gb_per_gpu: float | None = None  # its `mem usage=` (GiB of weights on a rank)
    avail_gb_before_weights: float | None = None  # `Load weight begin. avail mem=`


class GpuFacts(Frozen):
    """What the diagnosis knows of the GPUs (console.gpu.models.Topology is the full matrix)."""

    gpu_name: str | None = None
    num_gpus: int | None = None
    nvlink: bool | None = None  # None: unknown (no agent header)
    source: str = ""
    driver_version: str | None = None  # the agent header's, shown in a shared report
    cuda_version: str | None = None
    # NCCL all-reduce microseconds at the decode message, per GPU count, measured on this host
    # by the all-reduce probe (console/jobs/allreduce.py); empty: not measured (priors)
    allreduce_us: dict[int, float] = {}


class RunEvidence(Frozen):
    """A run's evidence: per-step windows plus the facts that hold for the whole run."""

    steps: list[StepEvidence] = []
    startup: StartupFacts = StartupFacts()
    flags: dict[str, Any] = {}
    env: dict[str, str] = {}
    topology: GpuFacts = GpuFacts()
    sources: list[str] = []  # what was collected: "log", "metrics", "gpu", "client"
    # The steps were split from a log file (console/diagnose/from_log.py), not measured:
    # step time against batch is fitted on the Decode lines themselves.
    split_from_log: bool = False


class EvidenceItem(Frozen):
    """One number (or fact) with where it came from."""

    source: str  # e.g. "Decode lines", "/metrics", "GPU telemetry", "startup log", "client"
    text: str  # the sentence shown to the operator
    values: dict[str, Any] = {}


class Suggestion(Frozen):
    flags: dict[str, Any] = {}  # profile flag changes (None removes the flag)
    env: dict[str, str | None] = {}  # profile env changes (None removes the variable)
    sweep: dict[str, Any] = {}  # sweep settings (prompts_per_concurrency, workers, ...)
    host: str | None = None  # a change outside SGLang (power limit, cooling)
    expect: str = ""  # the expected effect, in words
    # The predicted effect of the change, so an A/B (or tune) can check it: total tok/s
    # gain in % at this concurrency (None: no prediction).
    gain_pct: float | None = None
    at_concurrency: int | None = None
    # What gain_pct is: "prediction" (a throughput prediction from the evidence), "bound" (an
    # upper bound: the A/B lands in 0..gain_pct), "prior" (from a constant, not this run's
    # evidence: the A/B lands in gain_low_pct..gain_high_pct).
    gain_kind: str = "prediction"
    gain_low_pct: float | None = None
    gain_high_pct: float | None = None
    # A latency prediction (ITL mean change in %, negative: faster) for a change that acts on
    # per-request latency, not throughput (its gain_pct is then None).
    itl_change_pct: float | None = None


class Presence(Frozen):
    """Is the mechanism happening: the lines (or samples) that show it, of how many, over what
    span, and how sure ("plain": the lines say it outright; "weak": they suggest it)."""

    lines: int = 0
    of: int = 0
    span_s: float | None = None
    sure: str = "plain"
    text: str = ""


class Effect(Frozen):
    """What the mechanism costs and how that figure was had: "measured" (the run's own levels),
    "estimate" (fitted on a log's lines alone), "bound" (an upper bound), "prior" (a constant,
    not this run's evidence), "latency" (a per-request share, not throughput), "unmeasurable"
    (share None: `ab` is the one A/B that would measure it)."""

    kind: str = "measured"
    share: float | None = None
    low: float | None = None
    high: float | None = None
    ab: str = ""


# Effects ranked first to last: a prior or a bound never outranks a measured cause.
EFFECT_TIER = {"measured": 0, "estimate": 0, "bound": 1, "prior": 1, "latency": 2,
               "unmeasurable": 3}


class Cause(Frozen):
    """`confidence` is the share of the step's throughput the mechanism explains (0..1),
    computed from its own evidence (README "How confidence is computed"); `effect` says how
    that share was had, `presence` whether the mechanism is happening at all. Causes stored or
    built before these fields have them None (read as a measured effect, presence unknown)."""

    id: str
    title: str
    confidence: float  # 0..1
    evidence: list[EvidenceItem]
    suggest: Suggestion = Suggestion()
    presence: Presence | None = None
    effect: Effect | None = None

    @property
    def effect_kind(self) -> str:
        return self.effect.kind if self.effect is not None else "measured"

    @property
    def effect_label(self) -> str:
        """The effect in words: "explains 45%", "explains up to 12% (a bound)", "effect not
        measurable from this log"."""
        kind = self.effect_kind
        if kind == "unmeasurable" or (self.effect is not None and self.effect.share is None):
            estimate = (f" (the lines' estimate: ~{self.effect.share:.0%})"
                        if self.effect is not None and self.effect.share is not None else "")
            return f"effect not measurable from this evidence{estimate}"
        share = f"{self.confidence:.0%}"
        if kind == "bound":
            return f"explains up to {share} (an upper bound)"
        if kind == "prior":
            stated = (f": {self.effect.low:.0%}..{self.effect.high:.0%}" if self.effect and
                      self.effect.low is not None and self.effect.high is not None else "")
            return f"explains ~{share} (from a prior, not measured{stated})"
        if kind == "estimate":
            return f"explains ~{share} (an estimate from the log's lines)"
        if kind == "latency":
            return f"{share} of each request's decode time (latency, not throughput)"
        return f"explains {share}"


class KneeInfo(Frozen):
    kind: str
    concurrency: int | None = None
    next_concurrency: int | None = None
    gain_pct: float | None = None
    sentence: str = ""
    # A request-rate sweep's knee is a rate (console.bench.knee): `level` holds it.
    axis: str = "concurrency"
    level: float | None = None


class Diagnosis(Frozen):
    knee: KneeInfo
    causes: list[Cause] = []  # explained share >= the clear-cause threshold, largest first
    # Effects above the run's noise but below the threshold: listed when nothing is clear.
    candidates: list[Cause] = []
    noise: float | None = None  # the run's noise as a share of step time (effects below: dropped)
    checked: list[str] = []  # what was looked at (the honest "no clear cause" answer)
    sources: list[str] = []
    # Set when no request of the run completed: there is nothing to explain, only why every
    # step failed (its first error, deduplicated), and no cause is named.
    no_measurement: str | None = None
    # The decode CUDA-graph ladder against the run's batches (console/logs/ladder.py).
    ladder: Ladder | None = None

    @property
    def verdict(self) -> str:
        if self.no_measurement is not None:
            return "no measurement"
        if not self.causes:
            return "no clear cause"
        return ", ".join(c.id for c in self.causes[:3])
