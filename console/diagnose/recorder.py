"""Collect a sweep's evidence while it runs, step by step, and store it with the run.

    recorder = EvidenceRecorder(base_url, log=LocalLog(path), gpus=(transport, options), ...)
    await run_sweep(..., recorder=recorder)

During each step it scrapes `/metrics` (when the server has it; a 404 turns scraping off)
and keeps the GPU agent's samples; at the end of each step it reads the log lines written
since the previous step, builds that step's evidence and commits it, so a crash mid-sweep
keeps the evidence of every finished step. Every source is optional: a `--url` sweep has no
log and no GPUs, and the diagnosis says what it could check.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import httpx

from console.bench.models import StepResult
from console.diagnose.evidence import (
    gpu_points,
    metrics_point,
    startup_facts,
    step_evidence,
    topology_of,
)
from console.diagnose.models import GpuPoint, MetricsPoint, RunEvidence, StepEvidence, Topology
from console.host.transport import Transport
from console.text import sanitize

METRICS_INTERVAL_S = 1.0
MAX_READ_BYTES = 64 * 1024 * 1024  # per step: a runaway log cannot pin unbounded memory
STARTUP_BYTES = 4 * 1024 * 1024  # the head of the log holds the startup lines


class LogSource(Protocol):
    async def read_new(self) -> list[str]:
        """The complete lines written since the previous call (the first call: all)."""
        ...


class LocalLog:
    """A log file on this machine. The first read returns the head (the startup lines) and
    moves to the end; later reads return what was appended since."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.offset: int | None = None

    async def read_new(self) -> list[str]:
        return await asyncio.to_thread(self._read)

    def _read(self) -> list[str]:
        try:
            with self.path.open("rb") as handle:
                if self.offset is None:
                    data = handle.read(STARTUP_BYTES)
                    self.offset = handle.seek(0, 2)
                    return _complete_lines(data)[0]
                handle.seek(self.offset)
                data = handle.read(MAX_READ_BYTES)
        except OSError:
            return []
        lines, used = _complete_lines(data)
        self.offset += used
        return lines


class RemoteLog:
    """A log file on a host, read through the transport (`dd` from a byte offset, `stat` for
    the size: argv lists, no shell). First read: the head (startup lines), then the end."""

    def __init__(self, transport: Transport, path: str) -> None:
        self.transport = transport
        self.path = path
        self.offset: int | None = None

    async def read_new(self) -> list[str]:
        if self.offset is None:
            head = await self._dd(0, STARTUP_BYTES)
            size = await self.transport.run(["stat", "-c", "%s", self.path])
            text = (size.stdout or "").strip()
            if not size.ok or not text.isdigit():
                return []
            self.offset = int(text)
            return _complete_lines(head)[0]
        lines, used = _complete_lines(await self._dd(self.offset, MAX_READ_BYTES))
        self.offset += used
        return lines

    async def _dd(self, skip: int, count: int) -> bytes:
        result = await self.transport.run([
            "dd", f"if={self.path}", "iflag=skip_bytes,count_bytes", f"skip={skip}",
            f"count={count}", "bs=1M", "status=none"])
        if not result.ok:
            return b""
        out = result.stdout
        return out if isinstance(out, bytes) else str(out).encode("utf-8", "replace")


def _complete_lines(data: bytes) -> tuple[list[str], int]:
    """The complete lines in `data` (sanitised) and how many bytes they used."""
    cut = data.rfind(b"\n")
    if cut < 0:
        return [], 0
    text = data[: cut + 1].decode("utf-8", "replace")
    return [sanitize(line) for line in text.splitlines()], cut + 1


class EvidenceRecorder:
    def __init__(
        self,
        base_url: str,
        *,
        log: LogSource | None = None,
        gpu_collector: Any = None,
        headers: Sequence[tuple[str, str]] = (),
        flags: Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
        store: Any = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.log = log
        self.gpu_collector = gpu_collector
        self.headers = dict(headers)
        self.flags = dict(flags or {})
        self.env = dict(env or {})
        self.store = store
        self.run_id: int | None = None
        self.steps: list[StepEvidence] = []
        self.metrics: list[MetricsPoint] = []
        self.gpu: list[GpuPoint] = []
        self.topology = Topology()
        self.startup_lines: list[str] = []
        self.server_info: dict[str, Any] | None = None
        self.sources: set[str] = {"client"}
        self._tasks: list[asyncio.Task[None]] = []
        self._metrics_on = True
        self._pending: list[str] = []

    # ---- lifecycle -----------------------------------------------------------------------
    async def start(self, run_id: int | None, server_info: Mapping[str, Any] | None) -> None:
        """Read the startup lines, start the samplers, store the run-level facts."""
        self.run_id = run_id
        self.server_info = dict(server_info) if server_info else None
        if self.log is not None:
            with contextlib.suppress(Exception):
                self.startup_lines = await self.log.read_new()
                self.sources.add("log")
        self._tasks.append(asyncio.create_task(self._scrape_loop()))
        if self.gpu_collector is not None:
            self._tasks.append(asyncio.create_task(self._gpu_loop()))
        self._save_run()

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(BaseException):
                await task
        self._tasks.clear()
        if self.gpu_collector is not None:
            with contextlib.suppress(Exception):
                await self.gpu_collector.close()

    async def step_started(self, index: int) -> None:
        """Lines written before the step began belong to no step (e.g. the flush, warmup)."""
        if self.log is not None:
            with contextlib.suppress(Exception):
                await self.log.read_new()

    async def step_finished(self, result: StepResult) -> StepEvidence:
        lines: list[str] = []
        if self.log is not None:
            with contextlib.suppress(Exception):
                lines = await self.log.read_new()
        evidence = step_evidence(result, lines, self.metrics, self.gpu)
        self.steps.append(evidence)
        if self.store is not None and self.run_id is not None:
            self.store.save_step_evidence(self.run_id, evidence)
            self._save_run()  # the topology may have arrived since the start
        return evidence

    # ---- samplers ------------------------------------------------------------------------
    async def _scrape_loop(self) -> None:
        async with httpx.AsyncClient(timeout=5, headers=self.headers, trust_env=False) as client:
            while self._metrics_on:
                try:
                    resp = await client.get(self.base_url + "/metrics")
                except httpx.HTTPError:
                    resp = None
                if resp is not None and resp.status_code == 404:
                    self._metrics_on = False  # no --enable-metrics: logs alone will do
                    return
                if resp is not None and resp.status_code == 200:
                    point = metrics_point(resp.text, time.time())
                    if point is not None:
                        self.metrics.append(point)
                        self.sources.add("metrics")
                await asyncio.sleep(METRICS_INTERVAL_S)

    async def _gpu_loop(self) -> None:
        from console.gpu.models import GpuHeader

        with contextlib.suppress(Exception):
            async for event in self.gpu_collector:
                if isinstance(event, GpuHeader):
                    self.topology = topology_of(event)
                    continue
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
