"""Collect a sweep's evidence while it runs, step by step, and store it with the run.

    recorder = EvidenceRecorder(EvidenceSources(log=LocalLog(path), gpu=collector), ...)
    await run_sweep(..., recorder=recorder)

During each step it keeps the `/metrics` pages and the GPU agent's samples its sources
deliver (console/diagnose/sources.py: standalone observers for the CLI, tees of the session's
own for the console); at the end of each step it reads the log lines written since the
previous step, builds that step's evidence and commits it, so a crash mid-sweep keeps the
evidence of every finished step. Every source is optional: a `--url` sweep has no log and no
GPUs, and the diagnosis says what it could check.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping
from typing import Any, Protocol

from console.bench.energy import step_energy
from console.bench.gpus import serving_gpus
from console.bench.models import StepEnergy, StepResult
from console.diagnose.evidence import (
    gpu_points,
    metrics_point,
    startup_facts,
    step_evidence,
    topology_of,
)
from console.diagnose.models import GpuFacts, GpuPoint, MetricsPoint, RunEvidence, StepEvidence
from console.diagnose.sources import EvidenceSources, MetricsSource, SampleSource


class EvidenceStore(Protocol):
    """Where evidence is committed (console.store's RunStore)."""

    def save_run_evidence(self, run_id: int, evidence: RunEvidence) -> None: ...

    def save_step_evidence(self, run_id: int, evidence: StepEvidence) -> None: ...


class EvidenceRecorder:
    def __init__(
        self,
        sources: EvidenceSources,
        *,
        flags: Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
        store: EvidenceStore | None = None,
    ) -> None:
        self.log = sources.log
        self.gpu_source = sources.gpu
        self.metrics_source = sources.metrics
        self.flags = dict(flags or {})
        self.env = dict(env or {})
        self.store = store
        self.run_id: int | None = None
        self.steps: list[StepEvidence] = []
        self.metrics: list[MetricsPoint] = []
        self.gpu: list[GpuPoint] = []
        self.topology = GpuFacts()
        self.startup_lines: list[str] = []
        self.server_info: dict[str, Any] | None = None
        self.sources: set[str] = {"client"}
        self._tasks: list[asyncio.Task[None]] = []
        self._step_lines: list[str] = []  # read by step_log before the step finished

    # ---- lifecycle -----------------------------------------------------------------------
    async def start(self, run_id: int | None, server_info: Mapping[str, Any] | None) -> None:
        """Read the startup lines, start the samplers, store the run-level facts."""
        self.run_id = run_id
        self.server_info = dict(server_info) if server_info else None
        if self.log is not None:
            with contextlib.suppress(Exception):
                self.startup_lines = await self.log.read_new()
                self.sources.add("log")
        if self.metrics_source is not None:
            self._tasks.append(asyncio.create_task(self._metrics_loop(self.metrics_source)))
        if self.gpu_source is not None:
            self._tasks.append(asyncio.create_task(self._gpu_loop(self.gpu_source)))
        self._save_run()

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(BaseException):
                await task
        self._tasks.clear()
        for source in (self.gpu_source, self.metrics_source):
            if source is not None:
                with contextlib.suppress(Exception):
                    await source.close()

    async def step_started(self, index: int) -> None:
        """Lines written before the step began belong to no step (e.g. the flush, warmup)."""
        self._step_lines = []
        if self.log is not None:
            with contextlib.suppress(Exception):
                await self.log.read_new()

    async def step_log(self) -> list[str]:
        """The log lines written since the step began (step_finished keeps them too)."""
        if self.log is not None:
            with contextlib.suppress(Exception):
                self._step_lines.extend(await self.log.read_new())
        return list(self._step_lines)

    async def step_finished(self, result: StepResult) -> StepEvidence:
        lines = await self.step_log()
        self._step_lines = []
        evidence = step_evidence(result, lines, self.metrics, self.gpu)
        self.steps.append(evidence)
        if self.store is not None and self.run_id is not None:
            self.store.save_step_evidence(self.run_id, evidence)
            self._save_run()  # the topology may have arrived since the start
        return evidence

    def step_energy(self, result: StepResult) -> StepEnergy | None:
        """Power and tokens per joule over the step's steady window (console/bench/energy.py)
        from the GPU samples taken so far."""
        serving = serving_gpus(self.server_info, self.flags, self.env)
        return step_energy(result, ((g.t, g.index, g.power_w) for g in self.gpu), serving)

    # ---- samplers ------------------------------------------------------------------------
    async def _metrics_loop(self, source: MetricsSource) -> None:
        with contextlib.suppress(Exception):
            async for text in source:
                point = metrics_point(text, time.time())
                if point is not None:
                    self.metrics.append(point)
                    self.sources.add("metrics")

    async def _gpu_loop(self, source: SampleSource) -> None:
        from console.gpu.models import GpuHeader, GpuSample

        with contextlib.suppress(Exception):
            async for event in source:
                if isinstance(event, GpuHeader):
                    self.topology = topology_of(event)
                    continue
                if not isinstance(event, GpuSample):
                    continue  # the agent's warnings and errors are the session's to show
                self.gpu.extend(gpu_points(event, time.time()))
                self.sources.add("gpu")

    # ---- results -------------------------------------------------------------------------
    def run_facts(self) -> RunEvidence:
        facts = startup_facts(self.startup_lines, self.server_info, self.flags)
        return RunEvidence(startup=facts, flags=self.flags, env=self.env,
                           topology=self.topology, sources=sorted(self.sources))

    def evidence(self) -> RunEvidence:
        return self.run_facts().model_copy(update={"steps": list(self.steps)})

    def _save_run(self) -> None:
        if self.store is not None and self.run_id is not None:
            self.store.save_run_evidence(self.run_id, self.run_facts())
