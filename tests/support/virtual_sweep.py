"""A sweep of the simulator on a virtual clock: the sim's own Runner and Engine (startup lines,
scheduler, performance model, log lines, GPU counters) and the telemetry agent's sim GPUs,
driven in one process by an event loop whose time jumps to the next timer instead of waiting
for it. A sweep of minutes of simulated GPU time costs the CPU time of its Python steps only,
and nothing it measures depends on how fast or loaded this machine is: every timestamp (the
client's records, the Decode lines' throughput, the GPU samples) is the virtual clock's.

    run = virtual_sweep(["--tp-size", "8", "--sim-nvlink"], spec, env={...}, tmp=tmp_path)
    run.diagnosis.causes

What it leaves out, on purpose: HTTP (tests/test_diagnose_causes.py sweeps the sim over real
HTTP for every cause id; this battery is about the diagnosis's judgement across many
profiles), and the telemetry agent's process (its `SimGpu` model reads the same state dicts
the runner writes). The client is a closed loop per stream, like the native engine's workers,
with an optional per-chunk CPU cost so a too-small client can be modelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import random
import types
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

import console.sim.engine as sim_engine
from console.bench.energy import step_energy
from console.bench.engines import client_warning, prompts_for
from console.bench.metrics import RequestRecord, step_metrics
from console.bench.models import StepResult
from console.bench.slo import attainment
from console.bench.warmup import steady_after_warmup
from console.config_models import SweepPreset
from console.diagnose.diagnose import diagnose
from console.diagnose.evidence import gpu_points, startup_facts, step_evidence, topology_of
from console.diagnose.models import Diagnosis, GpuPoint, RunEvidence, StepEvidence
from console.gpu import agent
from console.sim import gpu_state
from console.sim.args import parse
from console.sim.config import resolve
from console.sim.runner import Runner

EPOCH = 1_800_000_000.0  # virtual unix time of loop time 0 (any fixed value)
SAMPLE_S = 0.25  # the runner's state interval and the agent's sampling interval


class SimDied(RuntimeError):
    """The simulated server crashed (startup OOM, NaN): its last log lines."""


class VirtualLoop(asyncio.SelectorEventLoop):
    """When nothing is ready to run, time jumps to the next timer. Correct only while every
    event comes from this loop's own timers and callbacks (no sockets, threads, processes)."""

    def __init__(self) -> None:
        super().__init__()
        self._now = 0.0

    def time(self) -> float:
        return self._now

    def _run_once(self) -> None:
        ready = self._ready  # type: ignore[attr-defined]
        scheduled = self._scheduled  # type: ignore[attr-defined]
        if not ready and scheduled and not self._stopping:  # type: ignore[attr-defined]
            self._now = max(self._now, scheduled[0]._when)
        super()._run_once()  # type: ignore[misc]


@dataclass
class Client:
    """The load generator: `workers` event loops, each spending `cpu_per_chunk_s` of CPU per
    streamed chunk (0: an ideal client). A saturated worker sees chunks late and starts its
    next request late, as a real one does."""

    workers: int = 4
    cpu_per_chunk_s: float = 0.0
    busy_until: list[float] = field(default_factory=list)
    cpu_s: list[float] = field(default_factory=list)
    lags: list[float] = field(default_factory=list)

    def reset(self) -> None:
        self.busy_until = [0.0] * self.workers
        self.cpu_s = [0.0] * self.workers
        self.lags = []

    def handle(self, worker: int, now: float) -> float:
        """When worker `worker` has processed a chunk that arrived at `now`."""
        if not self.cpu_per_chunk_s:
            return now
        start = max(now, self.busy_until[worker])
        self.lags.append(start - now)
        self.busy_until[worker] = start + self.cpu_per_chunk_s
        self.cpu_s[worker] += self.cpu_per_chunk_s
        return self.busy_until[worker]


@dataclass
class VirtualRun:
    steps: list[StepResult]
    evidence: RunEvidence
    diagnosis: Diagnosis
    log: str

    def step(self, concurrency: int) -> StepResult:
        return next(s for s in self.steps if s.concurrency == concurrency)

    def total(self, concurrency: int) -> float:
        metrics = self.step(concurrency).metrics
        assert metrics is not None
        return metrics.headline_total_tok_s()


@contextmanager
def _engine_clock(loop: VirtualLoop) -> Iterator[None]:
    """The engine stamps tokens with time.monotonic(): on this loop that is the loop's time."""
    shim = types.SimpleNamespace(monotonic=loop.time, time=lambda: EPOCH + loop.time())
    with mock.patch.object(sim_engine, "time", shim):
        yield


class _Driver:
    def __init__(self, runner: Runner, spec: SweepPreset, client: Client) -> None:
        self.runner = runner
        self.engine = runner.engine
        self.spec = spec
        self.client = client
        self.buffer: io.StringIO = runner.log.err  # type: ignore[assignment]
        self.read_at = 0
        self.gpu: list[GpuPoint] = []
        sim = runner.cfg.sim
        rng = random.Random(sim.seed or 0)
        self.gpus = [agent.SimGpu(i, sim.gpu_name, sim.gpu_memory_mib, rng)
                     for i in range(sim.num_gpus)]
        self.rid = 0
        self.lengths = random.Random(1234)

    def new_lines(self) -> list[str]:
        text = self.buffer.getvalue()
        chunk, self.read_at = text[self.read_at:], len(text)
        return chunk.splitlines()

    async def sample_gpus(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(SAMPLE_S)
            now = loop.time()
            state = gpu_state.compute_state(
                self.runner._load(), gpu_name=self.runner.cfg.sim.gpu_name,
                num_gpus=self.runner.cfg.sim.num_gpus,
                memory_total_mib=self.runner.cfg.sim.gpu_memory_mib, pid=1, now=EPOCH + now)
            reads = [gpu.read(g, SAMPLE_S, []) for gpu, g in zip(self.gpus, state["gpus"],
                                                                   strict=True)]
            self.gpu.extend(gpu_points({"gpus": reads}, EPOCH + now))

    async def one_request(self, worker: int, records: list[RequestRecord]) -> None:
        loop = asyncio.get_running_loop()
        spec = self.spec
        input_len, output_len = self._lengths()
        record = RequestRecord(start_ns=_ns(loop.time()), prompt_tokens=input_len,
                               requested_output=output_len)
        records.append(record)
        self.rid += 1
        req = self.engine.new_req(f"v{self.rid}", input_len, output_len, spec.ignore_eos)
        done: asyncio.Future[None] = loop.create_future()
        seen = [0]
        last = [loop.time()]

        def sink() -> bool:
            count = len(req.output_ids)
            if count > seen[0]:
                last[0] = self.client.handle(worker, loop.time())
                record.chunks.append((_ns(last[0]), count - seen[0]))
                seen[0] = count
            if req.finished and not done.done():
                done.set_result(None)
            return True

        req.sink = sink
        self.engine.submit(req)
        await done
        record.end_ns = _ns(last[0])
        record.output_tokens = len(req.output_ids)
        wait = last[0] - loop.time()
        if wait > 0:
            await asyncio.sleep(wait)  # the worker is still busy with the last chunk

    def _lengths(self) -> tuple[int, int]:
        """Uniform in [range_ratio x len, len], as SGLang's bench_serving random dataset."""
        spec, rng = self.spec, self.lengths
        low_in = max(1, int(spec.input_len * spec.range_ratio))
        low_out = max(1, int(spec.output_len * spec.range_ratio))
        return rng.randint(low_in, spec.input_len), rng.randint(low_out, spec.output_len)

    async def step(self, index: int, concurrency: int) -> tuple[StepResult, StepEvidence]:
        loop = asyncio.get_running_loop()
        self.new_lines()  # lines before the step belong to no step
        prompts = prompts_for(self.spec, concurrency) or concurrency
        self.client.reset()
        records: list[RequestRecord] = []
        left = [prompts]

        async def stream(n: int) -> None:
            while left[0] > 0:
                left[0] -= 1
                await self.one_request(n % self.client.workers, records)

        started = loop.time()
        await asyncio.gather(*(stream(n) for n in range(concurrency)))
        finished = loop.time()
        lines = self.new_lines()
        metrics = step_metrics(records, concurrency, workers=self.client.workers)
        steady, warmup = steady_after_warmup(records, concurrency, ratio=self.spec.steady_ratio,
                                             log_lines=lines)
        cpu, lag = self._client_health(finished - started)
        metrics = metrics.model_copy(update={
            "client_cpu_max": cpu, "client_loop_lag_p99_ms": lag,
            "client_warning": (client_warning(cpu, lag)
                               if cpu is not None and lag is not None else None),
            "steady": steady, "warmup": warmup,
            # as console/bench/engines.py counts it when the sweep has an SLO
            "slo": attainment(records, self.spec.slo, metrics.duration_s)
            if self.spec.slo is not None else None})
        result = StepResult(index=index, concurrency=concurrency, status="ok",
                            started_at=EPOCH + started, finished_at=EPOCH + finished,
                            metrics=metrics)
        # as the sweep's evidence recorder adds it (console/diagnose/recorder.py)
        result = result.model_copy(update={"energy": step_energy(
            result, ((g.t, g.index, g.power_w) for g in self.gpu))})
        evidence = step_evidence(result, lines, (), self.gpu)
        await asyncio.sleep(1.0)  # the sweep's pause between steps (flush, settle)
        return result, evidence

    def _client_health(self, seconds: float) -> tuple[float | None, float | None]:
        if not self.client.cpu_per_chunk_s or seconds <= 0:
            return None, None
        cpu = max(self.client.cpu_s) / seconds
        lags = sorted(self.client.lags)
        lag = lags[int(0.99 * (len(lags) - 1))] * 1000 if lags else 0.0
        return cpu, lag


def _ns(t: float) -> int:
    return round((EPOCH + t) * 1e9)


def _argv(flags: dict[str, Any]) -> list[str]:
    argv: list[str] = []
    for name, value in flags.items():
        if value is None or value is False:
            continue
        argv += [f"--{name}"] if value is True else [f"--{name}", str(value)]
    return argv


def virtual_sweep(flags: dict[str, Any], spec: SweepPreset, *, tmp: Path,
                  env: dict[str, str] | None = None, client: Client | None = None
                  ) -> VirtualRun:
    """Start the sim with `flags` (SGLang's and --sim-*), sweep `spec`, diagnose."""
    argv = ["--model-path", "test-model", "--sim-startup-seconds", "0",
            "--sim-state-file", str(tmp / f"gpu-state-{abs(hash(str(flags)))}.json"),
            *_argv(flags)]
    args, sim, sglang_argv = parse(argv)
    env = dict(env or {})
    cfg = resolve(args, sim, sglang_argv, env=env)
    loop = VirtualLoop()
    try:
        with _engine_clock(loop):
            return loop.run_until_complete(_run(cfg, spec, env, flags, client or Client()))
    finally:
        loop.close()


async def _run(cfg: Any, spec: SweepPreset, env: dict[str, str], flags: dict[str, Any],
               client: Client) -> VirtualRun:
    runner = Runner(cfg)
    err = runner.log.err = io.StringIO()
    runner.log.out = io.StringIO()
    runner.write_state = lambda: None  # type: ignore[method-assign]  # no state file needed

    def die() -> None:  # the sim's crash kills its own process: here, fail the sweep instead
        raise SimDied(err.getvalue()[-2000:])

    runner._die = die  # type: ignore[method-assign]
    await runner.startup()
    startup_lines = runner.log.err.getvalue().splitlines()
    engine_task = asyncio.create_task(runner.engine.run())
    runner.phase = "ready"
    driver = _Driver(runner, spec, client)
    driver.new_lines()
    sampler = asyncio.create_task(driver.sample_gpus())
    steps: list[StepResult] = []
    step_ev: list[StepEvidence] = []
    try:
        index = 0
        for _ in range(spec.repeats):
            for concurrency in spec.concurrency:
                result, evidence = await driver.step(index, concurrency)
                steps.append(result)
                step_ev.append(evidence)
                index += 1
    finally:
        sampler.cancel()
        engine_task.cancel()
        for task in (sampler, engine_task):
            with contextlib.suppress(asyncio.CancelledError):
                await task
    sglang_flags = {k: v for k, v in flags.items() if not k.startswith("sim-")}
    header = {"gpus": [{"name": cfg.sim.gpu_name}] * cfg.sim.num_gpus,
              "topology": {"links": [["NV18" if cfg.sim.nvlink else "NODE"]],
                           "source": "sim"}}
    run_evidence = RunEvidence(
        steps=step_ev, startup=startup_facts(startup_lines, None, sglang_flags),
        flags=sglang_flags, env=env, topology=topology_of(header),
        sources=["client", "gpu", "log"])
    return VirtualRun(steps, run_evidence, diagnose(steps, run_evidence), err.getvalue())
