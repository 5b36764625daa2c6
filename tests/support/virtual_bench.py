"""The tuner's bench on the simulator's virtual clock (tests/support/virtual_sweep.py): the sim's
own Runner, Engine, scheduler, performance model, log lines and GPU counters, started and
stopped per launch in this process, swept by a closed-loop client, every step and its evidence
stored in a real run store. A tune of an hour of simulated GPU time costs seconds of CPU, and
nothing it measures depends on this machine's speed.

    bench = VirtualBench(store, tmp)
    state, tune_id = run_virtual(run_tune(bench, new_state(request, profile), store=store))

What it shares with the product: the tuner (console/jobs/tune.py), the candidate plan, the
validation (`check_change` against the schema the simulator's `--help` prints), the verdict,
the diagnosis of the stored evidence, the run store. What it leaves out: processes, HTTP and
SSH (tests/test_jobs_tune.py checks HostBench's crash detection on a real simulator).

Each launch is seeded from its name in the tune (`launch`), so a resumed tune sees the same
noise as an uninterrupted one at the same passes. `restart_s` is the simulated time a restart
costs (the demo's simulator: its process start, SIM_PROCESS_S).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import subprocess
import sys
import zlib
from collections.abc import Coroutine, Sequence
from functools import cache
from pathlib import Path
from typing import Any, TypeVar, cast

from console.bench.abplan import SIM_PROCESS_S
from console.bench.models import (
    StepFailed,
    StepFinished,
    StepMetrics,
    StepResult,
    StepStarted,
    SweepEvent,
    SweepFinished,
    SweepStarted,
    Warmup,
)
from console.bench.warmup import warm_up
from console.config_models import ServerProfile, SweepPreset
from console.diagnose.diagnose import diagnose_stored
from console.diagnose.evidence import startup_facts, topology_of
from console.diagnose.models import Diagnosis, RunEvidence
from console.jobs.tune_bench import CandidateFailed, SweepListener, SweepOutcome, check_change
from console.jobs.tune_models import Change
from console.server.flags import FlagSchema, parse_help
from console.server.known import TYPE_HINTS
from console.server.lease import host_lease
from console.sglang.crash import exception_line
from console.sim.args import parse
from console.sim.config import resolve
from console.sim.runner import Runner
from console.store.db import RunStore
from console.store.models import RunMeta
from tests.support.virtual_sweep import (
    EPOCH,
    Client,
    SimDied,
    VirtualLoop,
    _argv,
    _Driver,
    _engine_clock,
)

T = TypeVar("T")
STEP_TIMEOUT_S = 3600.0  # simulated: a step that long means the server hangs


def run_virtual(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` on a virtual-clock loop (the sim's engine stamps tokens with its time)."""
    loop = VirtualLoop()
    try:
        with _engine_clock(loop):
            return loop.run_until_complete(coro)
    finally:
        loop.close()


@cache
def sim_schema() -> FlagSchema:
    """What the flags editor reads from a simulator host: `python -m console.sim --help` and
    `--sim-help`, merged as console.server.discovery merges them."""
    def read(flag: str) -> FlagSchema:
        text = subprocess.run([sys.executable, "-m", "console.sim", flag], check=True,
                              capture_output=True, text=True, timeout=120,
                              env={**os.environ, "COLUMNS": "100"}).stdout
        return parse_help(text)

    sglang, sim = read("--help"), read("--sim-help")
    merged = sglang.model_copy(update={"flags": {**sim.flags, **sglang.flags}})
    return merged.with_hints(TYPE_HINTS)


class _Server:
    """One launch: the runner, its engine task and the GPU sampler."""

    def __init__(self, runner: Runner, profile: ServerProfile, driver: _Driver,
                 startup: list[str]) -> None:
        self.runner = runner
        self.profile = profile
        self.driver = driver
        self.startup = startup
        self.engine = asyncio.create_task(runner.engine.run())
        self.engine.add_done_callback(self._died)
        self.sampler = asyncio.create_task(driver.sample_gpus())

    def _died(self, task: asyncio.Task[None]) -> None:
        with contextlib.suppress(SimDied):  # the runner logs SGLang's lines, then "dies"
            self.runner._engine_done(task)

    def crash(self) -> str | None:
        if not self.engine.done() or self.engine.cancelled():
            return None
        err = cast(io.StringIO, self.runner.log.err)  # set by VirtualBench when it launched
        return exception_line(err.getvalue().splitlines()) or "the server died"

    async def stop(self) -> None:
        for task in (self.sampler, self.engine):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


class VirtualBench:
    def __init__(self, store: RunStore, tmp: Path, *, host: str = "virtual",
                 schema: FlagSchema | None = None, restart_s: float = SIM_PROCESS_S,
                 client: Client | None = None) -> None:
        self.store = store
        self.tmp = tmp
        self.host_name = host
        self.schema = schema if schema is not None else sim_schema()
        self.restart_s = restart_s
        self.client = client or Client()
        self.server: _Server | None = None
        self.launches: list[tuple[str, str]] = []  # (profile name, launch) in order
        self.sweeps = 0
        self.on_sweep_event: SweepListener | None = None

    def lease(self, purpose: str) -> contextlib.AbstractAsyncContextManager[object]:
        return host_lease(self.host_name).hold(purpose)

    async def check(self, base: ServerProfile, change: Change
                    ) -> tuple[ServerProfile | None, list[str]]:
        return check_change(base, change, self.schema)

    async def restart(self, name: str, profile: ServerProfile, launch: str) -> None:
        if self.server is not None:
            await self.server.stop()
            self.server = None
        self.launches.append((name, launch))
        await asyncio.sleep(self.restart_s)
        flags = {**profile.flags, "sim-seed": zlib.crc32(launch.encode()) % 100_000,
                 "sim-startup-seconds": 0,
                 "sim-state-file": str(self.tmp / "gpu-state.json")}
        argv = ["--model-path", profile.model_path, *_argv(flags)]
        args, sim, sglang_argv = parse(argv)
        cfg = resolve(args, sim, sglang_argv, env=dict(profile.env))
        runner = Runner(cfg)
        err = runner.log.err = io.StringIO()
        runner.log.out = io.StringIO()
        runner.write_state = lambda: None  # type: ignore[method-assign]

        def die() -> None:
            raise SimDied(err.getvalue()[-4000:])

        runner._die = die  # type: ignore[method-assign]
        try:
            await runner.startup()
        except SimDied as exc:
            said = exception_line(str(exc).splitlines()) or "the server exited during startup"
            raise CandidateFailed(f"did not start: {said}") from None
        startup = runner.log.err.getvalue().splitlines()
        runner.phase = "ready"
        driver = _Driver(runner, SweepPreset(), self.client)
        driver.new_lines()
        self.server = _Server(runner, profile, driver, startup)

    async def sweep(self, name: str, profile: ServerProfile, spec: SweepPreset, *,
                    label: str, run_id: int | None, repeat_base: int,
                    finish: bool) -> SweepOutcome:
        server = self.server
        assert server is not None and server.profile == profile, "sweep of a profile not running"
        self.sweeps += 1
        server.driver.spec = spec
        if run_id is None:
            run_id = self._create_run(name, profile, spec, label, server)
        index = len(self.store.get_run(run_id).steps)
        # The events console.bench.sweep.run_sweep emits, in its order (HostBench's sweeps
        # come from there): a pass appended to a run counts on from the run's steps.
        total = index + spec.repeats * len(spec.concurrency)
        self._emit(SweepStarted(run_id, tuple(spec.concurrency), spec.repeats, total - index))
        steps: list[StepResult] = []
        warmed = await self._warm_up(server, spec)
        try:
            for repeat in range(spec.repeats):
                for level in spec.concurrency:
                    self._emit(StepStarted(index, level, repeat_base + repeat, total))
                    result, evidence = await self._step(server, index, level)
                    result = result.model_copy(update={"repeat": repeat_base + repeat})
                    if warmed is not None and result.metrics is not None:
                        result = result.model_copy(update={"metrics": result.metrics.model_copy(
                            update={"warmup_load": warmed})})
                        warmed = None
                    self.store.add_step(run_id, result)
                    self.store.save_step_evidence(run_id, evidence)
                    steps.append(result)
                    self._emit(StepFinished(result) if result.status == "ok"
                               else StepFailed(result))
                    index += 1
        except asyncio.CancelledError:
            self._emit(SweepFinished(run_id, "cancelled", tuple(steps)))
            raise
        except Exception:
            self._emit(SweepFinished(run_id, "failed", tuple(steps)))
            raise
        if finish:
            self.store.finish_run(run_id, "finished")
        self._emit(SweepFinished(run_id, "finished", tuple(steps)))
        return SweepOutcome(run_id, tuple(steps))

    async def _warm_up(self, server: _Server, spec: SweepPreset) -> Warmup | None:
        """The preset's warm-up load, as console.bench.sweep.run_sweep runs it."""
        if spec.warmup_load is None:
            return None
        loop = asyncio.get_running_loop()

        async def run_round(concurrency: int, prompts: int) -> StepMetrics:
            server.driver.spec = spec.model_copy(update={"num_prompts": prompts})
            try:
                result, _evidence = await self._step(server, -1, concurrency)
            finally:
                server.driver.spec = spec
            metrics: StepMetrics | None = result.metrics
            assert metrics is not None
            return metrics

        return await warm_up(run_round, spec.warmup_load, spec.concurrency, loop.time)

    def _emit(self, event: SweepEvent) -> None:
        if self.on_sweep_event is not None:
            self.on_sweep_event(event)

    async def _step(self, server: _Server, index: int, level: int) -> Any:
        if (said := server.crash()) is not None:
            raise CandidateFailed(f"crashed during the sweep: {said}")
        task = asyncio.ensure_future(server.driver.step(index, level))
        done, _ = await asyncio.wait({task, server.engine}, timeout=STEP_TIMEOUT_S,
                                     return_when=asyncio.FIRST_COMPLETED)
        if task not in done:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
            said = server.crash() or "a step never finished"
            raise CandidateFailed(f"crashed during the sweep: {said}")
        return task.result()

    def _create_run(self, name: str, profile: ServerProfile, spec: SweepPreset, label: str,
                    server: _Server) -> int:
        flags = {k: v for k, v in profile.flags.items() if not k.startswith("sim-")}
        loop_now = asyncio.get_running_loop().time()
        run_id = self.store.create_run(RunMeta(host=self.host_name, profile=name, flags=flags,
                                               label=label, spec=spec.model_dump(mode="json")),
                                       started_at=EPOCH + loop_now)
        sim = server.runner.cfg.sim
        header = {"gpus": [{"name": sim.gpu_name}] * sim.num_gpus,
                  "topology": {"links": [["NV18" if sim.nvlink else "NODE"]], "source": "sim"}}
        self.store.save_run_evidence(run_id, RunEvidence(
            startup=startup_facts(server.startup, None, flags), flags=flags,
            env=dict(profile.env), topology=topology_of(header),
            sources=["client", "gpu", "log"]))
        return run_id

    def diagnose(self, run_id: int | None, steps: Sequence[StepResult]) -> Diagnosis:
        return diagnose_stored(self.store, run_id, steps)

    async def close(self) -> None:
        if self.server is not None:
            await self.server.stop()
            self.server = None
