"""HostSession: the live session for one configured host.

It owns the transport and the background tasks (GPU collector, log follower, server status
poll, a sweep) and turns everything they produce into typed events, folded into `state` and
queued for one consumer. Failures of a task become Problem events and the task retries with
backoff: nothing fails silently and nothing in here waits on the UI.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from console.config_models import HostConfig, PlateauConfig
from console.host.transport import ConnectionEvent, Transport
from console.session import adapters
from console.session.adapters import AdapterMissing
from console.session.events import (
    ConnectionChanged,
    GpuUpdate,
    LogBatch,
    Problem,
    ServerStats,
    SessionEvent,
    SweepDone,
    TopologyUpdate,
)
from console.session.state import Clock, HostState, utc_now

STATS_PERIOD_S = 0.5
_NOTICE_LEVEL = {
    "lost": "error", "error": "error", "reconnecting": "warning", "truncated": "warning",
}
STATUS_POLL_S = 2.0
MAX_BACKOFF_S = 30.0

TransportFactory = Callable[[HostConfig], Transport]


class HostSession:
    def __init__(
        self,
        host: HostConfig,
        config: PlateauConfig,
        *,
        clock: Clock = utc_now,
        transport_factory: TransportFactory = adapters.open_transport,
        launch_profile: str | None = None,
        store_path: Path | None = None,
    ) -> None:
        self.host = host
        self.config = config
        self.state = HostState(host.name, clock=clock)
        self._transport_factory = transport_factory
        self.transport: Transport | None = None
        self._queue: asyncio.Queue[SessionEvent | None] = asyncio.Queue()
        self._tasks: set[asyncio.Task[None]] = set()
        self._sweep_task: asyncio.Task[None] | None = None
        self._restart_task: asyncio.Task[None] | None = None
        self._missing_reported: set[str] = set()
        self._closed = False
        self.launch_profile = launch_profile
        self.store_path = store_path

    # -- events -------------------------------------------------------------------------------

    def emit(self, event: SessionEvent) -> None:
        self.state.apply(event)
        self._queue.put_nowait(event)

    async def events(self) -> AsyncIterator[SessionEvent]:
        while True:
            event = await self._queue.get()
            if event is None:
                return
            yield event

    def _problem(self, source: str, message: str, level: str = "error") -> None:
        self.emit(Problem(self.host.name, source, message, level=level))  # type: ignore[arg-type]

    # -- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        self._spawn(self._run(), "session")

    def _spawn(self, coro: Awaitable[None], name: str) -> asyncio.Task[None]:
        task = asyncio.ensure_future(coro)
        task.set_name(f"{self.host.name}:{name}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _run(self) -> None:
        self.emit(ConnectionChanged(self.host.name, "connecting"))
        try:
            transport = self._transport_factory(self.host)
            await transport.connect()
        except AdapterMissing as exc:
            self.emit(ConnectionChanged(self.host.name, "failed", str(exc)))
            return
        except Exception as exc:
            self.emit(ConnectionChanged(self.host.name, "failed", _describe(exc)))
            return
        self.transport = transport
        transport.subscribe(self._on_connection_event)
        self.emit(ConnectionChanged(self.host.name, "connected"))
        self._spawn(self._supervise("gpu", self._gpu_loop), "gpu")
        self._spawn(self._supervise("log", self._log_loop), "log")
        self._spawn(self._supervise("server", self._status_loop), "server")
        if self.launch_profile is not None:
            self._restart_task = self._spawn(self._launch(transport, self.launch_profile), "launch")

    async def _launch(self, transport: Transport, profile: str) -> None:
        """Start the server (the demo does this); a running one is reported, not replaced."""
        try:
            await adapters.start_server(transport, self.host, self.config, profile, self.emit)
        except AdapterMissing as exc:
            self._problem("server", f"cannot launch: {exc}", "warning")
        except Exception as exc:
            if self.state.server_state != "failed":
                self._problem("server", f"launch failed: {_describe(exc)}")

    async def stop_server(self) -> None:
        """Stop the host's server (the demo does this on exit)."""
        if self._restart_task is not None and not self._restart_task.done():
            self._restart_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._restart_task
        if self.transport is None:
            return
        try:
            await adapters.stop_server(self.transport, self.host, self.emit)
        except Exception as exc:
            self._problem("server", f"stop failed: {_describe(exc)}")

    def _on_connection_event(self, event: ConnectionEvent) -> None:
        mapping = {
            "connected": "connected",
            "reconnected": "connected",
            "lost": "lost",
            "reconnecting": "reconnecting",
            "failed": "failed",
            "closed": "closed",
        }
        status = mapping.get(event.kind, "lost")
        self.emit(ConnectionChanged(self.host.name, status, event.detail))  # type: ignore[arg-type]

    async def _supervise(self, source: str, loop: Callable[[Transport], Awaitable[None]]) -> None:
        """Run `loop`; on failure report it and retry with backoff. Missing areas: say once."""
        backoff = 1.0
        while not self._closed and self.transport is not None:
            started = time.monotonic()
            try:
                await loop(self.transport)
                if self._closed:
                    return
                self._problem(source, f"{source} stream ended; restarting in {backoff:.0f}s",
                              "warning")
            except asyncio.CancelledError:
                raise
            except AdapterMissing as exc:
                if source not in self._missing_reported:
                    self._missing_reported.add(source)
                    self._problem(source, f"{source} not available: {exc}", "warning")
                return
            except Exception as exc:
                why = _describe(exc)
                self._problem(source, f"{source} failed: {why}; retrying in {backoff:.0f}s")
            if time.monotonic() - started > 60:
                backoff = 1.0
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_S)

    async def _gpu_loop(self, transport: Transport) -> None:
        async for event in adapters.gpu_events(transport, self.host, self.config):
            if adapters.is_gpu_header(event):
                self.emit(TopologyUpdate(self.host.name, event))
            else:
                self.emit(GpuUpdate(self.host.name, event, self.state.clock()))

    async def _log_loop(self, transport: Transport) -> None:
        aggregator = adapters.stats_aggregator()
        last_stats = 0.0
        stats_version = -1
        async for batch in adapters.follow_log(transport, self.host, self.config):
            for notice in batch.notices:
                level = _NOTICE_LEVEL.get(notice.kind, "info")
                detail = f": {notice.detail}" if notice.detail else ""
                self._problem("log", f"log {notice.kind}{detail}", level)
            if batch.events:
                self.emit(LogBatch(self.host.name, tuple(batch.events)))
                aggregator.add_events(batch.events)
            # Stats at most twice a second: the strip's sparklines need no more.
            now = time.monotonic()
            if now - last_stats >= STATS_PERIOD_S:
                snapshot = aggregator.snapshot()
                if snapshot.version != stats_version:
                    stats_version = snapshot.version
                    last_stats = now
                    self.emit(ServerStats(self.host.name, snapshot))

    async def _status_loop(self, transport: Transport) -> None:
        # Self-rescheduling: the next poll is planned after this one ends, so polls never overlap.
        while True:
            if not self.restart_running:  # the lifecycle reports its own phases meanwhile
                status = await adapters.server_status(transport, self.host, self.config)
                if status is not None and not self.restart_running:
                    self.emit(status)
            await asyncio.sleep(STATUS_POLL_S)

    # -- commands -----------------------------------------------------------------------------

    @property
    def sweep_running(self) -> bool:
        return self._sweep_task is not None and not self._sweep_task.done()

    @property
    def restart_running(self) -> bool:
        return self._restart_task is not None and not self._restart_task.done()

    async def restart(self, profile: str | None = None) -> None:
        if self.sweep_running:
            self._problem("server", "restart refused: a sweep is running", "warning")
            return
        if self.restart_running:
            self._problem("server", "restart refused: a restart is already running", "warning")
            return
        if self.transport is None:
            self._problem("server", "restart refused: not connected", "warning")
            return
        chosen = profile or self.host.profile or self.state.profile
        if chosen is None:
            self._problem("server", "restart refused: no profile configured for this host")
            return
        self._restart_task = self._spawn(self._restart(self.transport, chosen), "restart")

    async def _restart(self, transport: Transport, profile: str) -> None:
        try:
            await adapters.restart_server(
                transport, self.host, self.config, profile, self.emit, self._gpu_memory
            )
        except AdapterMissing as exc:
            self._problem("server", f"restart not available: {exc}", "warning")
        except Exception as exc:
            # LifecycleFailed was already reported by the sink; this keeps other errors visible.
            if self.state.server_state != "failed":
                self._problem("server", f"restart failed: {_describe(exc)}")

    async def _gpu_memory(self) -> list[float]:
        """Used MiB per GPU from telemetry: lets the lifecycle wait for memory to come back."""
        sample = self.state.gpu_sample
        if sample is None:
            return []
        return [g.mem_used_mib or 0.0 for g in sample.gpus]

    async def start_sweep(self, preset: str = "default") -> None:
        if self.sweep_running:
            self._problem("sweep", "a sweep is already running", "warning")
            return
        if self.restart_running:
            self._problem("sweep", "sweep refused: a restart is running", "warning")
            return
        if self.transport is None:
            self._problem("sweep", "sweep refused: not connected", "warning")
            return
        self._sweep_task = self._spawn(self._sweep(self.transport, preset), "sweep")

    async def _sweep(self, transport: Transport, preset: str) -> None:
        profile = self.state.profile or self.host.profile
        try:
            await adapters.run_sweep(
                transport, self.host, self.config, preset, profile, self.emit, self.store_path
            )
        except asyncio.CancelledError:
            if self.state.sweep.running:
                self.emit(SweepDone(self.host.name, self.state.sweep.run_id or "-", False,
                                    "cancelled"))
            raise
        except AdapterMissing as exc:
            self._problem("sweep", f"sweeps not available: {exc}", "warning")
        except Exception as exc:
            self.emit(
                SweepDone(self.host.name, self.state.sweep.run_id or "-", False, _describe(exc))
            )

    async def cancel_sweep(self) -> None:
        if self._sweep_task is not None and not self._sweep_task.done():
            self._sweep_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._sweep_task

    async def close(self) -> None:
        self._closed = True
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self.transport is not None:
            with contextlib.suppress(Exception):
                await self.transport.close()
        self.emit(ConnectionChanged(self.host.name, "closed"))
        self._queue.put_nowait(None)


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:300]


def session_info(session: Any) -> str:
    return f"{session.host.name}: {session.state.connection}"
