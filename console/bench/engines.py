"""What a sweep step needs from an engine, and the native engine's implementation."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import httpx

from console.bench.arrivals import arrival_offsets
from console.bench.metrics import step_metrics
from console.bench.models import StepMetrics, StepPhase
from console.bench.native import WorkerPool
from console.bench.openai_probe import ProbeError, fit_client
from console.bench.server_probe import describe_http_error
from console.bench.slo import attainment
from console.bench.warmup import steady_after_warmup
from console.bench.workload import TraceRow, Workload, load_trace, trace_offsets
from console.config_models import SweepPreset
from console.engines import ServerEngine
from console.engines.sglang import SGLANG
from console.errors import PlateauError
from console.sglang import endpoints

Emit = Callable[[StepPhase], None]


class StepError(PlateauError):
    """A step could not be measured (server unreachable, the bench tool crashed...); raised
    before the first step (the client could not be fitted to the server), the sweep ends with
    its message as the operator's one line."""


@dataclass(frozen=True)
class StepOutcome:
    metrics: StepMetrics
    raw: dict[str, Any] | None = None


class Engine(Protocol):
    name: str

    async def prepare(self, base_url: str, spec: SweepPreset) -> None: ...

    async def run_step(
        self, base_url: str, spec: SweepPreset, index: int, concurrency: int, emit: Emit
    ) -> StepOutcome: ...

    def cancel(self) -> None: ...

    async def close(self) -> None: ...


def prompts_for(spec: SweepPreset, concurrency: int) -> int | None:
    """Requests per step: `num_prompts`, else concurrency x prompts_per_concurrency; None when
    the step is time-boxed instead."""
    if spec.step_seconds is not None and spec.num_prompts is None:
        return None
    if spec.num_prompts is not None:
        return spec.num_prompts
    return concurrency * spec.prompts_per_concurrency


FLUSH_CACHE_TIMEOUT_S = 60.0
"""SGLang's bench_serving default (--flush-cache-timeout, benchmark/serving.py
_DEFAULT_SGLANG_FLUSH_CACHE_TIMEOUT): the server waits up to this long for running and queued
requests to finish before it flushes (srt/managers/scheduler_components/flush_wrapper.py)."""


FLUSH_MISSING = re.compile(r"HTTP (?:404|405|501)\b")


async def flush_cache(base_url: str, headers: Sequence[tuple[str, str]] = (),
                      path: str = endpoints.FLUSH_CACHE) -> str | None:
    """POST /flush_cache?timeout=60 as bench_serving's flush_server_cache does: the server
    defers the flush until it is idle, so a straggler of the previous step does not fail it.
    The client waits longer than the server does. None, or why it failed."""
    try:
        async with httpx.AsyncClient(
            timeout=FLUSH_CACHE_TIMEOUT_S + 30, headers=dict(headers)
        ) as client:
            resp = await client.post(
                base_url.rstrip("/") + path, params={"timeout": FLUSH_CACHE_TIMEOUT_S}
            )
    except httpx.HTTPError as exc:
        return f"flush_cache failed: {describe_http_error(exc)}"
    if resp.status_code != 200:
        return f"flush_cache failed: HTTP {resp.status_code}: {resp.text[:200].strip()}"
    return None


async def served_model(base_url: str, headers: Sequence[tuple[str, str]] = ()) -> str:
    """The first model id from /v1/models (the OpenAI endpoints want one)."""
    return str((await _first_model(base_url, headers)).get("id") or "default")


async def context_length(base_url: str, headers: Sequence[tuple[str, str]] = ()) -> int:
    """The model's context length: /v1/models' `max_model_len` (SGLang's ModelCard,
    srt/entrypoints/openai/protocol.py); 0 when the server does not say."""
    value = (await _first_model(base_url, headers)).get("max_model_len")
    return value if isinstance(value, int) and value > 0 else 0


async def _first_model(base_url: str, headers: Sequence[tuple[str, str]]) -> dict[str, Any]:
    try:
        async with httpx.AsyncClient(timeout=10, headers=dict(headers)) as client:
            resp = await client.get(base_url.rstrip("/") + "/v1/models")
            resp.raise_for_status()
            data = resp.json().get("data") or []
            return data[0] if data and isinstance(data[0], dict) else {}
    except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError):
        return {}


def prompts_for_rate(spec: SweepPreset) -> int | None:
    """Requests in an open-loop step: `num_prompts`; None when time-boxed; else
    prompts_per_concurrency x (max_concurrency or 64)."""
    if spec.num_prompts is not None:
        return spec.num_prompts
    if spec.step_seconds is not None:
        return None
    return spec.prompts_per_concurrency * (spec.max_concurrency or 64)


def step_rate(spec: SweepPreset) -> float | None:
    """The open-loop step's rate: run_sweep hands each rate step a spec holding only it."""
    return spec.request_rate[0] if spec.request_rate else None


CPU_WARN = 0.75  # AIPerf's threshold for a worker that may be distorting its measurement
LAG_WARN_MS = 20.0


def client_warning(cpu_fraction: float, loop_lag_p99_ms: float) -> str | None:
    """A 'client-bound' note when the load generator itself looks saturated."""
    reasons = []
    if cpu_fraction > CPU_WARN:
        reasons.append(f"a load worker used {cpu_fraction:.0%} CPU")
    if loop_lag_p99_ms > LAG_WARN_MS:
        reasons.append(f"event-loop lag p99 {loop_lag_p99_ms:.0f} ms")
    if not reasons:
        return None
    return "client-bound? " + ", ".join(reasons) + " (not a pure server measurement)"


class NativeEngine:
    """Plateau's own streaming client (console.bench.worker) in a pool of processes."""

    name = "native"

    def __init__(
        self,
        *,
        streams_per_worker: int = 128,
        max_workers: int | None = None,
        seed: int = 1,
        headers: Sequence[tuple[str, str]] = (),
        server: ServerEngine = SGLANG,
        model: str | None = None,
        fallback_model: str | None = None,
    ) -> None:
        self.pool = WorkerPool(streams_per_worker=streams_per_worker, max_workers=max_workers)
        self.seed = seed
        self.headers = tuple(headers)
        self.server = server
        self.model = model or "default"
        self.given_model = model
        self.fallback_model = fallback_model
        self.context_len = 0
        self.trace: tuple[TraceRow, ...] = ()
        self.fit: Workload | None = None  # the server's answer to the probe (openai_probe)
        self.notes: list[str] = []
        self.flush_missing = server.flush_path is None

    async def prepare(self, base_url: str, spec: SweepPreset) -> None:
        if spec.endpoint != "generate":
            self.model = self.given_model or await served_model(base_url, self.headers)
            if self.model == "default" and self.fallback_model:
                self.model = self.fallback_model  # /v1/models said nothing (it may 500)
            try:
                fitted = await fit_client(base_url, self._workload(spec, 0), self.server,
                                          self.headers)
            except ProbeError as exc:
                raise StepError(str(exc)) from None
            self.fit, self.model = fitted.workload, fitted.workload.model
            self.notes.extend(fitted.notes)
        if spec.flush_cache and self.flush_missing:
            self._no_flush(f"{self.server.title} servers have no cache flush")
        if spec.workload in ("long-context", "sharegpt"):
            self.context_len = await context_length(base_url, self.headers)
        if spec.workload == "trace" and spec.trace_file:
            try:
                self.trace = load_trace(spec.trace_file)
            except (OSError, ValueError) as exc:
                raise StepError(f"trace: {exc}") from None

    def _no_flush(self, why: str) -> None:
        self.flush_missing = True
        self.notes.append(f"{why}: each step starts with the prefix cache the last one left")

    def _workload(self, spec: SweepPreset, seed: int) -> Workload:
        if self.fit is not None:
            return replace(self._base_workload(spec, seed), extensions=self.fit.extensions,
                           tokens_per_word=self.fit.tokens_per_word)
        return self._base_workload(spec, seed)

    def _base_workload(self, spec: SweepPreset, seed: int) -> Workload:
        return Workload(
            endpoint=spec.endpoint,
            input_len=spec.input_len,
            output_len=spec.output_len,
            ignore_eos=spec.ignore_eos,
            range_ratio=spec.range_ratio,
            model=self.model,
            seed=seed,
            kind=spec.workload,
            groups=spec.prefix_groups,
            prompts_per_group=spec.prompts_per_group,
            prefix_len=spec.prefix_len,
            turns=spec.turns,
            context_len=self.context_len,
            trace=self.trace,
        )

    def _open_loop(self, spec: SweepPreset, seed: int) -> tuple[list[float], int] | None:
        """(send times, expected in flight) for an open-loop step, None for a closed one.
        A trace replays its own timestamps (bench_serving ignores --request-rate for
        mooncake), scaled in a rate sweep so its mean rate is the step's."""
        rate = step_rate(spec)
        if spec.workload == "trace" and (rate is not None or spec.max_concurrency):
            rows = self.trace[: spec.num_prompts] if spec.num_prompts else self.trace
            offsets = trace_offsets(rows)
            if rate is not None and offsets[-1] > 0:
                scale = 0.0 if rate == float("inf") else (len(rows) - 1) / offsets[-1] / rate
                offsets = [t * scale for t in offsets]
            return offsets, min(len(rows), spec.max_concurrency or len(rows))
        if rate is None:
            return None
        try:
            offsets = arrival_offsets(rate, count=prompts_for_rate(spec),
                                      seconds=spec.step_seconds,
                                      burstiness=spec.burstiness, seed=seed)
        except ValueError as exc:
            raise StepError(str(exc)) from None
        expect = len(offsets) if rate == float("inf") else max(1, int(rate * 30))
        return offsets, min(expect, spec.max_concurrency or expect, 4096)

    async def run_step(
        self, base_url: str, spec: SweepPreset, index: int, concurrency: int, emit: Emit
    ) -> StepOutcome:
        seed = self.seed * 100_003 + index
        if spec.warmup_prompts:
            emit(StepPhase(index, "warmup", f"{spec.warmup_prompts} request(s)"))
            warm = replace(self._workload(spec, 0), output_len=min(spec.output_len, 16),
                           range_ratio=1.0, kind="random")
            await self.pool.run(
                base_url,
                warm,
                min(concurrency, spec.warmup_prompts),
                prompts=spec.warmup_prompts,
                seconds=None,
                timeout_s=spec.request_timeout_s,
                seed=seed + 7,
                headers=self.headers,
            )
        if spec.flush_cache and not self.flush_missing:
            await self._flush(base_url, index, emit)
        prompts = prompts_for(spec, concurrency)
        open_loop = self._open_loop(spec, seed)
        if open_loop is not None:
            prompts = len(open_loop[0])
        emit(StepPhase(index, "measure", f"{prompts or 'time-boxed'} request(s)"))
        try:
            records, window, workers = await self.pool.run(
                base_url,
                self._workload(spec, seed),
                open_loop[1] if open_loop else concurrency,
                prompts=prompts,
                seconds=spec.step_seconds,
                timeout_s=spec.request_timeout_s,
                seed=seed,
                headers=self.headers,
                arrivals=open_loop[0] if open_loop else None,
                cap=spec.max_concurrency,
            )
        except RuntimeError as exc:
            raise StepError(str(exc)) from exc
        if not records:
            raise StepError("no request was sent")
        metrics = step_metrics(records, concurrency, window=window, workers=workers)
        cpu, lag = self.pool.last_health
        update: dict[str, Any] = {
            "client_cpu_max": cpu,
            "client_loop_lag_p99_ms": lag,
            "client_warning": client_warning(cpu, lag),
            "slo": attainment(records, spec.slo, metrics.duration_s)
            if spec.slo is not None else None,
            "client_notes": list(self.notes),
        }
        if open_loop is None:
            update["steady"], update["warmup"] = steady_after_warmup(
                records, concurrency, ratio=spec.steady_ratio, step_window=window
            )
        else:  # no target concurrency to hold: the step's whole window is its measurement
            update["request_rate"] = step_rate(spec)
            update["max_concurrency"] = spec.max_concurrency
        return StepOutcome(metrics.model_copy(update=update))

    async def _flush(self, base_url: str, index: int, emit: Emit) -> None:
        """The server's cache flush; a server without one (404/405) is said once, not a
        failed step."""
        path = self.server.flush_path or endpoints.FLUSH_CACHE
        emit(StepPhase(index, "flush", path))
        problem = await flush_cache(base_url, self.headers, path)
        if problem is None:
            return
        if FLUSH_MISSING.search(problem):
            self._no_flush(f"this server has no {path} ({problem.partition(': ')[2][:60]})")
            return
        raise StepError(problem)

    def cancel(self) -> None:
        self.pool.cancel()

    async def close(self) -> None:
        self.pool.close()
