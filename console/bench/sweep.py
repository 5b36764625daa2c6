"""The sweep runner: steps in order, typed progress events, cancel, failed-step handling.

    outcome = await run_sweep(spec, base_url, engine=NativeEngine(), store=store, meta=meta,
                              on_event=print, log_tail=lambda: tail_lines)

Cancel by cancelling the task that awaits `run_sweep` (or setting `cancel_event`): the engine
cuts in-flight requests off, the run is marked cancelled, and every finished step is already
committed. A step that fails is recorded with its error and the server's last log lines
(from `log_tail`), then the sweep stops or goes on as `spec.stop_on_failure` says.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict, Unpack

import httpx

from console import aio
from console.bench.engines import Engine, StepError
from console.bench.gpus import serving_gpus
from console.bench.models import (
    RunMeta,
    RunSink,
    StepFailed,
    StepFinished,
    StepMetrics,
    StepObserver,
    StepPhase,
    StepResult,
    StepStarted,
    SweepEvent,
    SweepFinished,
    SweepStarted,
    Warmup,
)
from console.bench.server_probe import server_gone
from console.bench.warmup import warm_up, with_log_signs
from console.config_models import SweepPreset
from console.errors import StoreError
from console.redact import stored_server_info
from console.sglang import endpoints
from console.text import sanitize

LogTail = Callable[[], "Sequence[str] | Awaitable[Sequence[str]]"]

# A step is failed (not just "had errors") when at least this share of its requests failed.
FAILED_ERROR_SHARE = 0.5
LOG_TAIL_LINES = 20


def failure_reason(result_metrics: Any) -> str | None:
    """Why a measured step counts as failed, or None. A step where no request completed has
    no latency and no throughput worth the name: failed, whatever else it saw (requests cut
    off by the time box do not make it a measurement)."""
    attempted = result_metrics.completed + result_metrics.errors
    if result_metrics.completed == 0:
        first = result_metrics.error_samples[0] if result_metrics.error_samples else "no reply"
        cut = f", {result_metrics.incomplete} cut off by the time box" if (
            result_metrics.incomplete
        ) else ""
        return f"no request completed ({result_metrics.errors} error(s){cut}): {first}"
    if attempted and result_metrics.errors / attempted >= FAILED_ERROR_SHARE:
        first = result_metrics.error_samples[0] if result_metrics.error_samples else ""
        return f"{result_metrics.errors} of {attempted} requests failed: {first}"
    return None


async def _tail(log_tail: LogTail | None) -> list[str]:
    """The server's last log lines (the callable may be sync or async)."""
    if log_tail is None:
        return []
    try:
        lines = log_tail()
        if inspect.isawaitable(lines):
            lines = await aio.wait_for(lines, timeout=15)
        return [sanitize(line) for line in list(lines)[-LOG_TAIL_LINES:]]
    except Exception as exc:  # the log source is someone else's; never lose the step for it
        return [f"(could not read the log: {type(exc).__name__}: {exc})"]


async def fetch_server_info(base_url: str, headers: Sequence[tuple[str, str]] = ()
                            ) -> dict[str, Any] | None:
    """GET /server_info (falling back to the deprecated /get_server_info), secrets redacted
    (SGLang reports `api_key` and the launch command verbatim)."""
    async with httpx.AsyncClient(timeout=10, headers=dict(headers)) as client:
        for path in endpoints.SERVER_INFO_PATHS:
            try:
                resp = await client.get(base_url.rstrip("/") + path)
            except httpx.HTTPError:
                return None
            if resp.status_code == 200:
                try:
                    data = resp.json()
                except ValueError:
                    return None
                return stored_server_info(data) if isinstance(data, dict) else None
    return None


class SweepOptions(TypedDict, total=False):
    """run_sweep's keywords, all optional (SweepRun says what each is for)."""

    store: RunSink | None
    meta: RunMeta | None
    on_event: Callable[[SweepEvent], None] | None
    log_tail: LogTail | None
    cancel_event: asyncio.Event | None
    snapshot_server_info: bool
    headers: Sequence[tuple[str, str]] | None
    run_id: int | None
    repeat_base: int
    finish: bool
    recorder: StepObserver | None


def _no_event(_event: SweepEvent) -> None:
    return None


@dataclass
class SweepRun:
    """One sweep pass: what its phases (plan, warm, steps, store) share."""

    spec: SweepPreset
    base_url: str
    engine: Engine
    store: RunSink | None = None
    meta: RunMeta = field(default_factory=RunMeta)
    emit: Callable[[SweepEvent], None] = _no_event
    log_tail: LogTail | None = None
    """The server's last log lines, kept with a failed step."""
    cancel_event: asyncio.Event | None = None
    run_id: int | None = None
    """The run the steps are stored in (None: a new one, when there is a store)."""
    repeat_base: int = 0
    """The repeat this pass is (an interleaved A/B's side runs one pass per repeat)."""
    finish: bool = True
    """Close the run when this pass ends well (an A/B side's last pass only)."""
    recorder: StepObserver | None = None

    def stored_run(self) -> tuple[RunSink, int] | None:
        if self.store is None or self.run_id is None:
            return None
        return self.store, self.run_id


SweepStatus = Literal["finished", "failed", "cancelled"]


@dataclass
class SweepPlan:
    """The pass's steps in order: (level, repeat), indexed from `index_base`."""

    levels: list[Level]
    steps: list[tuple[Level, int]]
    index_base: int
    gpus: int | None

    @property
    def total(self) -> int:
        return self.index_base + len(self.steps)


@dataclass
class _Outcome:
    """Where the step loop got to."""

    results: list[StepResult] = field(default_factory=list)
    status: SweepStatus = "finished"
    reason: str | None = None
    warmed: Warmup | None = None
    """The warm-up load, until the first measured step carries it."""


async def run_sweep(
    spec: SweepPreset, base_url: str, *, engine: Engine, **options: Unpack[SweepOptions]
) -> SweepFinished:
    """Run every (concurrency, repeat) step of `spec` against `base_url`, in order.

    An A/B that interleaves its sides (A B A B ...) stores each side as one run: it passes the
    side's `run_id` to append to, `repeat_base` (the repeat this pass is) and `finish=False`
    until the last pass, so `plateau compare` sees the same repeats the A/B judged. A cancel
    or a failure still closes the run.

    `recorder` (a console.diagnose EvidenceRecorder) collects each step's diagnosis
    evidence; its failures never fail the sweep."""
    run = SweepRun(
        spec, base_url, engine, store=options.get("store"),
        meta=options.get("meta") or RunMeta(), emit=options.get("on_event") or _no_event,
        log_tail=options.get("log_tail"), cancel_event=options.get("cancel_event"),
        run_id=options.get("run_id"), repeat_base=options.get("repeat_base", 0),
        finish=options.get("finish", True), recorder=options.get("recorder"),
    )
    await _describe_run(run, options.get("snapshot_server_info", True), options.get("headers"))
    plan = await _start(run)
    outcome = _Outcome()
    try:
        await engine.prepare(base_url, spec)
        outcome.warmed = await _warm_up(engine, base_url, spec, plan.levels, plan.index_base,
                                        run.emit)
        await _run_steps(run, plan, outcome)
    except asyncio.CancelledError:
        engine.cancel()
        _close(run, "cancelled", outcome.results)
        raise
    except Exception:
        # e.g. the engine could not prepare (connection lost), or the disk filled: the run ends
        # here, and must not stay 'running' in history with every finished step readable.
        _close(run, "failed", outcome.results)
        raise
    finally:
        with contextlib.suppress(Exception):
            await engine.close()
        if run.recorder is not None:
            await _quietly(run.recorder.close())
    stored = run.stored_run()
    if stored is not None and (run.finish or outcome.status != "finished"):
        stored[0].finish_run(stored[1], outcome.status)
    finished = SweepFinished(run.run_id, outcome.status, tuple(outcome.results), outcome.reason)
    run.emit(finished)
    return finished


# -- plan ---------------------------------------------------------------------------------------


async def _describe_run(run: SweepRun, snapshot_server_info: bool,
                        headers: Sequence[tuple[str, str]] | None) -> None:
    """The run's meta: the server's own description (GET /server_info), the spec, the
    engine."""
    meta = run.meta
    if snapshot_server_info and meta.server_info is None:
        if headers is None:  # the engine's own (e.g. Authorization for --api-key servers)
            headers = tuple(getattr(run.engine, "headers", ()) or ())
        info = await fetch_server_info(run.base_url, headers)
        if info is not None:
            meta = meta.model_copy(
                # An info without a version keeps what the target knew (its launch record's).
                update={"server_info": info,
                        "server_version": str(info.get("version") or meta.server_version)}
            )
    if not meta.spec:
        meta = meta.model_copy(update={"spec": run.spec.model_dump(mode="json")})
    run.meta = meta.model_copy(
        update={"engine": run.engine.name, "server_url": meta.server_url or run.base_url}
    )


async def _start(run: SweepRun) -> SweepPlan:
    """The run in the store (a new one unless appending), the recorder started, the steps
    planned and announced."""
    if run.run_id is None and run.store is not None:
        run.run_id = run.store.create_run(run.meta)
    if run.recorder is not None:
        await _quietly(run.recorder.start(run.run_id, run.meta.server_info))
    spec = run.spec
    levels = sweep_levels(spec)
    plan = SweepPlan(
        levels=levels,
        steps=[(lv, run.repeat_base + r) for lv in levels for r in range(spec.repeats)],
        index_base=run.repeat_base * len(levels),
        # per-GPU figures divide by it
        gpus=serving_gpus(run.meta.server_info, run.meta.flags).count,
    )
    run.emit(SweepStarted(run.run_id, tuple(level.concurrency for level in levels),
                          spec.repeats, len(plan.steps)))
    return plan


# -- steps --------------------------------------------------------------------------------------


async def _run_steps(run: SweepRun, plan: SweepPlan, outcome: _Outcome) -> None:
    """Each planned step in order, until the plan ends, a cancel, a server gone or (with
    stop_on_failure) a failed step."""
    for index, (level, repeat) in enumerate(plan.steps, start=plan.index_base):
        if run.cancel_event is not None and run.cancel_event.is_set():
            outcome.status = "cancelled"
            return
        run.emit(StepStarted(index, level.concurrency, repeat, plan.total, rate=level.rate))
        if run.recorder is not None:
            await _quietly(run.recorder.step_started(index))
        result = await _step(run, plan, outcome, index, level, repeat)
        if result is None:  # cancelled through cancel_event
            outcome.status = "cancelled"
            return
        gone = await server_gone(run.base_url) if result.error else None
        await _keep(run, result, outcome.results)
        if gone is not None:
            # Every later step would fail the same way (and send its whole load into a dead
            # port): stop here and say it once.
            outcome.status = "failed"
            outcome.reason = f"the server at {run.base_url} is gone ({gone}); sweep stopped"
            return
        if result.error and run.spec.stop_on_failure:
            outcome.status = "failed"  # stopped early; otherwise failed steps are just recorded
            return


async def _step(run: SweepRun, plan: SweepPlan, outcome: _Outcome, index: int, level: Level,
                repeat: int) -> StepResult | None:
    """One measured step as its result (failed: with its error and the log's last lines);
    None when cancel_event cut it off."""
    started = time.time()
    error: str | None = None
    metrics: StepMetrics | None = None
    raw = None
    step_task = asyncio.ensure_future(run.engine.run_step(
        run.base_url, level.spec, index, level.concurrency, lambda e: run.emit(e)))
    try:
        measured = await _with_cancel(step_task, run.engine, run.cancel_event)
    except StepError as exc:
        error = str(exc)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
    else:
        if measured is None:
            return None
        metrics, raw = await _measured(run, outcome, measured.metrics), measured.raw
        error = failure_reason(metrics)
    result = StepResult(
        index=index,
        concurrency=level.concurrency,
        repeat=repeat,
        status="failed" if error else "ok",
        metrics=metrics,
        error=sanitize(error) if error else None,
        log_tail=await _tail(run.log_tail) if error else [],
        started_at=started,
        finished_at=time.time(),
        raw=raw,
        request_rate=level.rate,
        gpus=plan.gpus,
    )
    if run.recorder is not None and metrics is not None:
        result = _with_energy(run.recorder, result)
    return result


async def _measured(run: SweepRun, outcome: _Outcome, metrics: StepMetrics) -> StepMetrics:
    """A step's metrics with the log's warm-up signs, and the warm-up load on the first."""
    if run.recorder is not None:
        metrics = await _with_log_signs(run.recorder, metrics)
    if outcome.warmed is not None:  # the first step says what ran before it
        metrics, outcome.warmed = metrics.model_copy(update={"warmup_load": outcome.warmed}), None
    return metrics


# -- store --------------------------------------------------------------------------------------


async def _keep(run: SweepRun, result: StepResult, results: list[StepResult]) -> None:
    """The finished step stored, shown to the recorder, kept and announced."""
    stored = run.stored_run()
    if stored is not None:
        store, run_id = stored
        try:
            store.add_step(run_id, result)
        except StoreError as exc:
            raise StoreError(
                f"{exc}; stopped at step {result.index + 1}, the {len(results)} step(s) "
                f"before it are stored as run {run_id}"
            ) from None
    if run.recorder is not None:
        await _quietly(run.recorder.step_finished(result))
    results.append(result)
    run.emit(StepFailed(result) if result.error else StepFinished(result))


def _close(run: SweepRun, status: Literal["cancelled", "failed"],
           results: list[StepResult]) -> None:
    """A run the sweep could not finish (cancelled, or failed by an error it raises on)."""
    stored = run.stored_run()
    if stored is not None:
        # A failure may be the disk filling: then closing fails too, and the failure is what
        # is raised.
        quiet = contextlib.suppress(StoreError) if status == "failed" else contextlib.nullcontext()
        with quiet:
            stored[0].finish_run(stored[1], status)
    run.emit(SweepFinished(run.run_id, status, tuple(results)))


async def _with_log_signs(recorder: StepObserver, metrics: StepMetrics) -> StepMetrics:
    """The step's warm-up with the JIT/autotune lines its server logged meanwhile."""
    try:
        async with asyncio.timeout(30):
            lines = await recorder.step_log()
    except asyncio.CancelledError:
        raise
    except Exception:  # evidence is a bonus (as in _quietly)
        return metrics
    return with_log_signs(metrics, lines)


WARMUP_SEED_INDEX = 1_000_000  # the warm-up load's rounds draw prompts no step draws


async def _warm_up(engine: Engine, base_url: str, spec: SweepPreset, levels: Sequence[Level],
                   index: int, emit: Callable[[SweepEvent], None]) -> Warmup | None:
    """The preset's warm-up load (console/bench/warmup.py) before the first step, if any."""
    if spec.warmup_load is None or spec.request_rate is not None or not levels:
        return None
    rounds = itertools.count(1)
    round_spec = spec.model_copy(update={"step_seconds": None, "warmup_prompts": 0,
                                         "flush_cache": False, "slo": None})

    async def run_round(concurrency: int, prompts: int) -> StepMetrics:
        number = next(rounds)
        emit(StepPhase(index, "warmup", f"warm-up load, round {number}: {prompts} request(s) "
                                        f"at concurrency {concurrency}"))
        outcome = await engine.run_step(
            base_url, round_spec.model_copy(update={"num_prompts": prompts}),
            WARMUP_SEED_INDEX + number, concurrency, lambda _event: None)
        return outcome.metrics

    warmed = await warm_up(run_round, spec.warmup_load, [lv.concurrency for lv in levels],
                           time.monotonic)
    emit(StepPhase(index, "warmup", warmed.text))
    return warmed


def _with_energy(recorder: StepObserver, result: StepResult) -> StepResult:
    """The step with its energy per token, when the recorder sampled GPU power during it."""
    try:
        energy = recorder.step_energy(result)
    except Exception:  # evidence is a bonus (as in _quietly)
        return result
    return result.model_copy(update={"energy": energy}) if energy is not None else result


@dataclass(frozen=True)
class Level:
    """One point of the sweep's x axis: a concurrency, or an open-loop request rate (then
    `concurrency` is the --max-concurrency cap, 0 without one, and `spec` holds only this
    rate)."""

    concurrency: int
    spec: SweepPreset
    rate: float | None = None


def sweep_levels(spec: SweepPreset) -> list[Level]:
    if spec.request_rate is None:
        return [Level(c, spec) for c in spec.concurrency]
    return [Level(spec.max_concurrency or 0, spec.model_copy(update={"request_rate": [rate]}),
                  rate) for rate in spec.request_rate]


async def _quietly(work: Awaitable[Any]) -> None:
    """Evidence is a bonus: a failing recorder must never cost the sweep its steps."""
    try:
        # asyncio.timeout, not wait_for: on 3.11 wait_for returns the inner result when the
        # inner work ends as the caller is cancelled, and a cancelled sweep or A/B went on.
        async with asyncio.timeout(30):
            await work
    except asyncio.CancelledError:
        raise
    except Exception:
        pass  # the diagnosis says what it could not check


async def _stop_step(task: asyncio.Future[Any], engine: Engine) -> None:
    """Cut the engine off, give it a moment to hand back what it has, then cancel."""
    engine.cancel()
    try:
        await aio.wait_for(asyncio.shield(task), timeout=5)
    except BaseException:
        task.cancel()
        with contextlib.suppress(BaseException):
            await task


async def _with_cancel(
    task: asyncio.Future[Any], engine: Engine, cancel_event: asyncio.Event | None
) -> Any:
    """Await the step; if `cancel_event` fires first, cut the engine off and return None."""
    if cancel_event is None:
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            await _stop_step(task, engine)
            raise
    waiter = asyncio.ensure_future(cancel_event.wait())
    try:
        done, _ = await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        await _stop_step(task, engine)
        raise
    finally:
        waiter.cancel()
    if task in done:
        return task.result()
    await _stop_step(task, engine)
    return None


__all__ = [
    "StepFailed",
    "StepFinished",
    "StepPhase",
    "StepStarted",
    "SweepFinished",
    "SweepStarted",
    "fetch_server_info",
    "run_sweep",
]
