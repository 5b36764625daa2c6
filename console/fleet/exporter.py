"""The fleet exporter: one HostSession per host (the observers the console runs), an
OpenMetrics endpoint over their summaries, and the run history read in the background.

A scrape reads only what is in memory: each session's HostState (folded in this loop) and the
last history read. No scrape waits on a host or on SQLite, so a host that hangs or drops is
answered with what is known of it and `plateau_host_up 0` with the reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from aiohttp import web
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import CollectorRegistry

from console.fleet.history import HistoryReader, HostHistory
from console.fleet.metrics import FleetCollector, FleetView, HostView, ObserverCost
from console.fleet.summary import host_up, summarize
from console.session.events import GpuUpdate, LogBatch, SessionEvent
from console.session.state import Clock, HostState, utc_now

HISTORY_PERIOD_S = 10.0
RETRY_AFTER_S = 30.0
"""A host whose connection failed is tried again this long after (a session does not)."""
STALE_SAMPLES = 5
"""A host whose newest GPU sample is older than this many sampling intervals is not up."""
STALE_MIN_S = 10.0

log = logging.getLogger(__name__)


class ObservedSession(Protocol):
    """What the exporter needs of a session (console.session.service.HostSession)."""

    state: HostState
    observer: Callable[[SessionEvent], None] | None

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    def events(self) -> AsyncIterator[SessionEvent]: ...


@dataclass
class _Tally:
    """One host's observer output, counted as the events go by."""

    events: Counter[str]
    agent_cpu_s: float = 0.0
    sample_cost_s: float | None = None

    def see(self, event: SessionEvent) -> None:
        if isinstance(event, GpuUpdate):
            self.events["gpu_sample"] += 1
            self.agent_cpu_s += (event.sample.agent_cpu_ms or 0.0) / 1000.0
            cost = event.sample.cost_ms
            self.sample_cost_s = cost / 1000.0 if cost is not None else None
        elif isinstance(event, LogBatch):
            self.events["log_event"] += len(event.events)
        else:
            self.events[_KINDS.get(type(event).__name__, "other")] += 1

    def cost(self) -> ObserverCost:
        return ObserverCost(dict(self.events), self.agent_cpu_s, self.sample_cost_s)


_KINDS = {"ServerStats": "server_stats", "ServerStatus": "server_status",
          "TopologyUpdate": "topology", "Problem": "problem",
          "ConnectionChanged": "connection"}


class Fleet:
    """The sessions, what they cost, and the history; `view()` is what a scrape serves."""

    def __init__(
        self,
        sessions: Sequence[ObservedSession],
        *,
        history: HistoryReader | None = None,
        stale_after_s: float = STALE_MIN_S,
        retry_after_s: float = RETRY_AFTER_S,
        clock: Clock = utc_now,
        cpu_seconds: Callable[[], float] = time.process_time,
    ) -> None:
        self.sessions = list(sessions)
        self.history = history
        self.stale_after_s = stale_after_s
        self.retry_after_s = retry_after_s
        self.clock = clock
        self.cpu_seconds = cpu_seconds
        self.known: dict[str, HostHistory] = {}
        self.history_error = ""
        self._tallies = {s.state.host: _Tally(Counter()) for s in self.sessions}
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        for session in self.sessions:
            session.observer = self._tallies[session.state.host].see
            self._tasks.append(asyncio.ensure_future(_drain(session)))
            await session.start()
            self._tasks.append(asyncio.ensure_future(self._retry(session)))
        if self.history is not None:
            self._tasks.append(asyncio.ensure_future(self._read_history(self.history)))

    async def _retry(self, session: ObservedSession) -> None:
        """Connect again to a host that failed (not for a host key: that is a decision)."""
        state = session.state
        while True:
            await asyncio.sleep(self.retry_after_s)
            if state.connection == "failed" and state.host_key is None \
                    and "HOST KEY" not in state.connection_detail:
                await session.start()

    async def _read_history(self, reader: HistoryReader) -> None:
        hosts = [s.state.host for s in self.sessions]
        while True:
            try:
                self.known = await asyncio.to_thread(reader.read, hosts)
                self.history_error = ""
            except Exception as exc:  # keep serving the last read; say why once
                if str(exc) != self.history_error:
                    log.warning("history %s: %s", reader.path, exc)
                self.history_error = str(exc)
            await asyncio.sleep(HISTORY_PERIOD_S)

    def view(self) -> FleetView:
        now = self.clock()
        hosts = []
        for session in self.sessions:
            name = session.state.host
            known = self.known.get(name, HostHistory())
            summary = summarize(session.state, now, last_run=known.last_run)
            up, reason = host_up(summary, self.stale_after_s)
            hosts.append(HostView(summary, up, reason, known.ab, self._tallies[name].cost()))
        return FleetView(hosts, self.cpu_seconds())

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for session in self.sessions:
            session.observer = None
            with contextlib.suppress(Exception):
                await session.close()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


async def _drain(session: ObservedSession) -> None:
    """Nobody reads the sessions' queues here: the states are folded on emit already."""
    async for _event in session.events():
        pass


def metrics_app(fleet: Fleet) -> web.Application:
    """`/metrics` in the format the scraper asks for (OpenMetrics for Prometheus, else the
    classic text format), and a one-line index."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FleetCollector(fleet.view))

    async def metrics(request: web.Request) -> web.Response:
        encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
        body: bytes = encoder(registry)
        return web.Response(body=body, headers={"Content-Type": content_type})

    async def index(_request: web.Request) -> web.Response:
        return web.Response(text="plateau exporter: /metrics\n")

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/", index)
    return app


async def serve(fleet: Fleet, host: str, port: int) -> tuple[web.AppRunner, int]:
    """Listen on host:port (0: a free port); returns the runner and the port bound."""
    runner = web.AppRunner(metrics_app(fleet), access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = runner.addresses[0][1] if runner.addresses else port
    return runner, int(bound)


def stale_after(gpu_interval_s: float) -> float:
    return max(STALE_MIN_S, STALE_SAMPLES * gpu_interval_s)
