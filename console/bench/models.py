"""Typed results of a sweep: per-request records, per-step metrics, progress events.

Every throughput field says what it counts: `output_tok_s` (generated tokens only) or
`total_tok_s` (prompt + generated). Latencies are milliseconds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, field_serializer

from console.config_models import rate_out


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Distribution(Frozen):
    """Summary of one latency metric, in milliseconds (None when there were no samples)."""

    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    count: int = 0


StepStatus = Literal["ok", "failed", "cancelled"]


class SteadyState(Frozen):
    """Throughput over the step's steady-state window (console.bench.steady): the longest span
    in which the client kept at least `threshold` requests in flight (ratio x the step's
    target concurrency). `reached` is False when the step never got there (all ramp and
    drain): its whole-step numbers are then all there is, and the step is flagged."""

    ratio: float
    threshold: int
    reached: bool
    step_s: float = 0.0  # first request start to last request end
    start_s: float = 0.0  # window start, seconds after the first request started
    window_s: float = 0.0
    completed: int = 0
    input_tok_s: float = 0.0
    output_tok_s: float = 0.0
    total_tok_s: float = 0.0
    request_per_s: float = 0.0
    mean_in_flight: float = 0.0


class Warmup(Frozen):
    """Where a freshly started server's latency converged (console/bench/warmup.py): the
    requests before it are left out of the step's steady-state figures, and shown as warm-up.
    `source`: found inside a measured step, or the warm-up load a sweep ran before its first
    step. `signs`: the server log's warm-up lines during it (console/sglang/warmup.py), by
    kind."""

    detected: bool
    source: Literal["step", "warm-up load"] = "step"
    converged: bool = True  # False: latency never settled within the first half of the step
    requests: int = 0  # requests started before convergence
    seconds: float = 0.0  # from the first request's start to convergence
    signs: dict[str, int] = {}
    warm_tpot_ms: float | None = None  # median TPOT of the warm-up requests
    steady_tpot_ms: float | None = None  # median TPOT after convergence
    tolerance: float = 0.0  # how far above the converged TPOT still counted as warming

    @property
    def text(self) -> str:
        """"warm-up 38 s / 74 requests (6 JIT compiles)", or "" when there was none."""
        jit = self.signs.get("deepgemm-jit", 0) + self.signs.get("torch-compile", 0)
        said = f" ({jit} JIT compile{'s' if jit != 1 else ''})" if jit else ""
        if not self.detected:
            return f"no warm-up seen{said}" if jit else ""
        if not self.converged:
            return f"still warming up: latency never converged in this step{said}"
        where = " before the sweep" if self.source == "warm-up load" else ""
        return f"warm-up {self.seconds:.0f} s / {self.requests} requests{where}{said}"


class SloResult(Frozen):
    """How one step met its latency SLO (console/bench/slo.py), counted the way SGLang's
    bench_serving counts goodput (python/sglang/benchmark/goodput.py, calculate_goodput):
    a request is good when it succeeded and met every objective; goodput is good requests
    per second of the step; `share` is good requests over requests sent."""

    slo_ms: dict[str, float]  # the objectives, e.g. {"ttft_p99_ms": 500.0}
    sent: int = 0  # requests sent (completed, failed and cut off by the time box)
    good: int = 0
    met: dict[str, int] = {}  # requests meeting each objective alone
    share: float = 0.0
    goodput_rps: float = 0.0


class StepEnergy(Frozen):
    """Power and energy over a step's steady window (console/bench/energy.py), from the GPU
    agent's power samples; `window` says which span the samples came from."""

    window: Literal["steady", "step"]
    window_s: float
    gpus: int
    samples: int
    # Whose power was summed: "serving", only the GPUs the server runs on (gpu_indices, from
    # console/bench/gpus.py); "all", every GPU the agent reports, since which GPUs serve was
    # not known (or none of them reported).
    counted: Literal["serving", "all"] = "all"
    gpu_indices: list[int] = []
    mean_power_w_per_gpu: float
    output_tok_per_j: float
    total_tok_per_j: float
    j_per_output_token: float | None


class StepMetrics(Frozen):
    """What one sweep step measured. Throughputs are per second over the measured window."""

    concurrency: int
    completed: int = 0
    errors: int = 0
    incomplete: int = 0  # cut off by the step's time box; their tokens still count
    duration_s: float = 0.0
    request_per_s: float = 0.0
    input_tok_s: float = 0.0
    output_tok_s: float = 0.0
    total_tok_s: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    measured_concurrency: float = 0.0  # Little's law: sum(e2e) / duration
    ttft_ms: Distribution = Distribution()
    itl_ms: Distribution = Distribution()  # per token: chunk gap / tokens in the chunk
    tpot_ms: Distribution = Distribution()  # per request: (e2e - ttft) / (output_tokens - 1)
    e2e_ms: Distribution = Distribution()
    # Cross-check: requests whose server-reported output length differed from what was asked.
    output_len_mismatches: int = 0
    error_samples: list[str] = []
    engine: Literal["native", "bench-serving"] = "native"
    workers: int = 1
    # The load generator watching itself (native engine): busiest worker's CPU share over the
    # step, its event-loop lag p99, and a warning when either says the client may be the
    # bottleneck (then the step is not a pure server measurement).
    client_cpu_max: float | None = None
    client_loop_lag_p99_ms: float | None = None
    client_warning: str | None = None
    # What the client had to adapt to this server, said once per step so a stored run keeps it
    # (console/bench/openai_probe.py): a refused extension (`ignore_eos`: output lengths then
    # vary), no cache flush, prompt lengths calibrated from the server's usage.
    client_notes: list[str] = []
    # Steady-state window (native engine); None for steps stored before it existed and for
    # engines without per-request timestamps (bench_serving).
    steady: SteadyState | None = None
    # Open-loop steps (console/bench/arrivals.py): the offered request rate (inf: all at once)
    # and the cap on requests in flight; None for a closed-loop concurrency step.
    request_rate: float | None = None
    max_concurrency: int | None = None
    # Prompt tokens the server said its prefix cache supplied (meta_info.cached_tokens).
    cached_tokens: int = 0
    # A fresh server's warm-up seen in this step (then `steady` starts after it), or run
    # before the sweep's first step (console/bench/warmup.py); None: not looked for.
    warmup: Warmup | None = None
    # The sweep's warm-up load, run before this (its first) step (SweepPreset.warmup_load).
    warmup_load: Warmup | None = None

    @field_serializer("request_rate")
    def _rate_out(self, value: float | None) -> float | str | None:
        return None if value is None else rate_out(value)
    # Latency SLO attainment and goodput when the sweep had an SLO (console/bench/slo.py).
    slo: SloResult | None = None

    def headline_total_tok_s(self) -> float:
        """Total tok/s to judge the step by: the steady-state window's when it had one."""
        if self.steady is not None and self.steady.reached:
            return self.steady.total_tok_s
        return self.total_tok_s

    def headline_output_tok_s(self) -> float:
        if self.steady is not None and self.steady.reached:
            return self.steady.output_tok_s
        return self.output_tok_s

    def warmup_text(self) -> str:
        """What warm-up this step left out or ran before it: "warm-up 38 s / 74 requests"."""
        said = [w.text for w in (self.warmup_load, self.warmup) if w is not None and w.text]
        return "; ".join(said)

    @property
    def no_steady_state(self) -> bool:
        """Measured with a steady-state check that found none (flag the step)."""
        return self.steady is not None and not self.steady.reached


class StepResult(Frozen):
    """One finished step (one concurrency, one repeat) as stored in history."""

    index: int
    concurrency: int
    repeat: int = 0
    status: StepStatus
    metrics: StepMetrics | None = None
    error: str | None = None
    log_tail: list[str] = []
    started_at: float = 0.0  # unix seconds
    finished_at: float = 0.0
    raw: dict[str, object] | None = None  # e.g. the bench_serving JSONL record
    energy: StepEnergy | None = None  # from the GPU agent's power samples, when it had some
    # An open-loop step's offered request rate (inf: all at once; then `concurrency` is its
    # in-flight cap, 0 for none), kept by the step itself: a step that failed has no metrics
    # to carry it, and must still sit at its rate in the table, the JSON and history.
    request_rate: float | None = None
    # GPUs serving the model when the step ran (console/bench/gpus.py): what per-GPU tok/s
    # divides by, in the JSON and the chart alike (console/bench/pareto.py, run_gpus).
    gpus: int | None = None

    @field_serializer("request_rate")
    def _rate_out(self, value: float | None) -> float | str | None:
        return None if value is None else rate_out(value)

    @property
    def rate(self) -> float | None:
        """The step's offered rate: its own, else its metrics' (steps stored before the step
        kept it); None for a closed-loop concurrency step."""
        if self.request_rate is not None:
            return self.request_rate
        return self.metrics.request_rate if self.metrics is not None else None


# ----------------------------------------------------------------------------- progress events


@dataclass(frozen=True)
class SweepStarted:
    run_id: int | None
    concurrency: tuple[int, ...]
    repeats: int
    total_steps: int
    kind: Literal["sweep-started"] = "sweep-started"


@dataclass(frozen=True)
class StepStarted:
    index: int
    concurrency: int
    repeat: int
    total_steps: int
    kind: Literal["step-started"] = "step-started"
    rate: float | None = None  # an open-loop step's request rate (then concurrency is its cap)


@dataclass(frozen=True)
class StepPhase:
    """A phase change inside a step: warmup, flush, measure, or a bench_serving line."""

    index: int
    phase: Literal["warmup", "flush", "measure", "output"]
    detail: str = ""
    kind: Literal["step-phase"] = "step-phase"


@dataclass(frozen=True)
class StepFinished:
    result: StepResult
    kind: Literal["step-finished"] = "step-finished"


@dataclass(frozen=True)
class StepFailed:
    result: StepResult
    kind: Literal["step-failed"] = "step-failed"


@dataclass(frozen=True)
class SweepFinished:
    run_id: int | None
    status: Literal["finished", "failed", "cancelled"]
    steps: tuple[StepResult, ...] = field(default_factory=tuple)
    reason: str | None = None  # why it stopped early (e.g. the server went away), said once
    kind: Literal["sweep-finished"] = "sweep-finished"


SweepEvent = SweepStarted | StepStarted | StepPhase | StepFinished | StepFailed | SweepFinished


class RunMeta(BaseModel):
    """What we know about the server and the workload when a run starts (stored with the run
    by console.store)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = ""
    server_url: str = ""
    server_version: str = ""
    profile: str = ""
    flags: dict[str, Any] = {}
    server_info: dict[str, Any] | None = None
    spec: dict[str, Any] = {}
    engine: str = "native"
    label: str = ""
    server_engine: str = ""
    """The inference engine measured (console/engines/); "" in runs stored before engines
    were told apart, which were SGLang's."""


class StepObserver(Protocol):
    """Watches a sweep step by step (console.diagnose's EvidenceRecorder, which collects each
    step's diagnosis evidence): bench calls it and never needs to know what it keeps."""

    async def start(self, run_id: int | None, server_info: Mapping[str, Any] | None) -> None: ...

    async def step_started(self, index: int) -> None: ...

    async def step_log(self) -> Sequence[str]:
        """The server's log lines written since the step began (its warm-up signs)."""
        ...

    async def step_finished(self, result: StepResult) -> object: ...

    def step_energy(self, result: StepResult) -> StepEnergy | None:
        """The step's power and energy per token from what was sampled during it."""
        ...

    async def close(self) -> None: ...


class RunSink(Protocol):
    """Where a sweep writes its run as it goes (console.store.db.RunStore implements it), so
    the sweep runner needs no knowledge of the database: bench is below store."""

    def create_run(self, meta: RunMeta) -> int: ...

    def add_step(self, run_id: int, step: StepResult) -> None: ...

    def finish_run(
        self, run_id: int, status: Literal["finished", "failed", "cancelled"]
    ) -> None: ...
