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
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from console.config_models import HostConfig, PlateauConfig
from console.errors import HostKeyError
from console.host.transport import ConnectionEvent, Transport
from console.logs.crash_finding import CrashWatch
from console.logs.models import LogEvent
from console.server.refusal import HostFacts, refusal
from console.session import adapters
from console.session.events import (
    ABUpdate,
    ConnectionChanged,
    GpuUpdate,
    HostKeyChanged,
    HostKeyUnknown,
    LogBatch,
    Problem,
    StatsUpdate,
    SweepDone,
    TopologyUpdate,
)
from console.session.evidence_taps import EvidenceTaps
from console.session.feed import Change, EventFeed
from console.session.profile_set import ProfileSet
from console.session.startup_tap import StartupTap
from console.session.state import Clock, HostState, current_profile, utc_now

if TYPE_CHECKING:  # the HTTP client, lifecycle and jobs come after the first frame
    import httpx

    from console.diagnose.log_diagnosis import LogDiagnosis
    from console.diagnose.sources import EvidenceSources
    from console.jobs.ab_models import ABProgress, ABRequest
    from console.jobs.tune_bench import TuneBench
    from console.logs.server_stats import StatsAggregator
    from console.server.discovery import FlagDiscovery
    from console.server.flags import FlagSchema
    from console.server.records import LaunchRecord
    from console.store.db import RunStore

STATS_PERIOD_S = 0.5
_NOTICE_LEVEL = {
    "lost": "error", "error": "error", "reconnecting": "warning", "truncated": "warning",
}
STATUS_POLL_S = 2.0
HEALTH_POLL_S = 30.0
METRICS_PERIOD_S = 5.0  # each scrape is an access line in the server log
METRICS_ROW_PERIOD_S = 15.0
"""/metrics for a host shown only as a fleet row: the row's load figures come from the log's
batch lines (live); a scrape and its parse were ~5% of the console's CPU at 64 hosts."""
MAX_BACKOFF_S = 30.0



class TransportFactory(Protocol):
    """Builds a host's transport; `accept_fingerprint` accepts exactly that unknown host key
    (saved to known_hosts). Only passed when the operator accepted one."""

    def __call__(self, host: HostConfig, *, accept_fingerprint: str | None = None) -> Transport:
        ...


class HostSession(EventFeed):
    replay_label = ""
    """A live host: not a replay (console.session.replay.ReplaySession says what it plays)."""
    log_diagnosis: LogDiagnosis | None = None
    """A live host's Why view diagnoses its stored runs, not a log file."""

    def __init__(
        self,
        host: HostConfig,
        config: PlateauConfig,
        *,
        clock: Clock = utc_now,
        transport_factory: TransportFactory = adapters.open_transport,
        launch_profile: str | None = None,
        server_gate: Callable[[], Awaitable[None]] | None = None,
        store_path: Path | None = None,
        flag_cache_dir: Path | None = None,
    ) -> None:
        self.host = host
        self._config = config
        self._profiles: ProfileSet | None = None
        self.state = HostState(host.name, clock=clock)
        self._transport_factory = transport_factory
        self.transport: Transport | None = None
        self._queue: asyncio.Queue[Change | None] = asyncio.Queue()
        self._tasks: set[asyncio.Task[None]] = set()
        self._sweep_task: asyncio.Task[None] | None = None
        self._restart_task: asyncio.Task[None] | None = None
        self._ab_task: asyncio.Task[None] | None = None
        self.flag_cache_dir = flag_cache_dir
        self.discovery: FlagDiscovery | None = None
        self.record: LaunchRecord | None = None  # the running server's (status poll)
        self._aggregator: StatsAggregator | None = None
        self._metrics_failing = False
        self._gpu_warned: set[str] = set()
        self._crashes_said: set[str] = set()
        self.taps = EvidenceTaps()  # a console sweep's evidence: tees of the loops below
        # A launch's startup lines (restart, A/B, tune): from the log loop's follower below.
        self.startup_tap = StartupTap()
        self._closed = False
        self._loops: list[asyncio.Task[None]] = []
        self._dropped: list[Transport] = []  # transports given up on (host key refused)
        self._host_key_reported: tuple[str, str] | None = None
        self.launch_profile = launch_profile
        # Awaited before this session starts a server (launch, restart, A/B): the demo's
        # owner guard must hold before any server it is to clean up after exists.
        self.server_gate = server_gate
        self.store_path = store_path
        self.on_screen = True  # set_pace: full-rate sampling while on screen
        self.in_detail = True  # set_pace: its own screen (not only a fleet row) shows it

    # -- events -------------------------------------------------------------------------------

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

    async def _run(self, accept_fingerprint: str | None = None) -> None:
        self.emit(ConnectionChanged(self.host.name, "connecting"))
        try:
            if accept_fingerprint is None:
                transport = self._transport_factory(self.host)
            else:
                transport = self._transport_factory(
                    self.host, accept_fingerprint=accept_fingerprint
                )
            await transport.connect()
        except HostKeyError as exc:
            self._host_key_refused(exc)
            return
        except Exception as exc:
            self.emit(ConnectionChanged(self.host.name, "failed", _describe(exc)))
            return
        self.transport = transport
        self._host_key_reported = None
        self.discovery = adapters.flag_discovery(transport, self.host, self.flag_cache_dir)
        transport.subscribe(partial(self._on_connection_event, transport))
        self.emit(ConnectionChanged(self.host.name, "connected"))
        self._loops = [
            self._start_gpu_loop(),
            self._spawn(self._supervise("log", self._log_loop), "log"),
            self._spawn(self._supervise("server", self._status_loop), "server"),
            self._spawn(self._supervise("metrics", self._metrics_loop), "metrics"),
        ]
        if self.launch_profile is not None:
            self._restart_task = self._spawn(self._launch(transport, self.launch_profile), "launch")

    async def _launch(self, transport: Transport, profile: str) -> None:
        """Start the server (the demo does this); a running one is reported, not replaced."""
        try:
            await self._pass_server_gate()
            await adapters.start_server(
                transport, self.host, self.config, profile, self.emit, self.discovery,
                self.startup_tap,
            )
        except Exception as exc:
            if self.state.server_state != "failed":
                self._problem("server", f"launch failed: {_describe(exc)}")

    async def _pass_server_gate(self) -> None:
        if self.server_gate is not None:
            await self.server_gate()

    async def stop_server(self) -> None:
        """Stop the host's server (the demo does this on exit). A running sweep or A/B holds
        the host, so it is cancelled first; its finished steps are already stored."""
        await self.cancel_sweep()
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

    # -- host keys ----------------------------------------------------------------------------

    def _host_key_refused(self, exc: HostKeyError) -> None:
        """The host's key was refused (at connect or on a reconnect): stop everything that
        uses the connection and say so once. An unknown key waits for `accept_host_key`; a
        changed key is an error and is never offered for acceptance."""
        problem = exc.problem
        seen = (problem.verdict, problem.fingerprint) if problem else ("refused", str(exc))
        if seen == self._host_key_reported:
            return
        self._host_key_reported = seen
        self._drop_transport()
        name = self.host.name
        if problem is None:
            self.emit(ConnectionChanged(name, "failed", _describe(exc)))
            return
        fields = (name, problem.host, problem.port, problem.key_type, problem.fingerprint,
                  str(problem.known_hosts), str(exc))
        if problem.verdict == "unknown":
            self.emit(HostKeyUnknown(*fields))
        else:
            self.emit(HostKeyChanged(*fields))

    def _drop_transport(self) -> None:
        """Forget the current transport (its retries would only hit the same key again)."""
        transport, self.transport = self.transport, None
        current = asyncio.current_task()
        for task in self._loops:
            if task is not current:
                task.cancel()
        self._loops = []
        if transport is not None:
            self._dropped.append(transport)
            self._spawn(_close_quietly(transport), "drop-transport")

    async def accept_host_key(self, fingerprint: str) -> bool:
        """Connect again accepting exactly `fingerprint` (the pending unknown key), which the
        transport then appends to known_hosts. False when it is not the key being asked about
        (a stale prompt): nothing is accepted then."""
        pending = self.state.host_key
        if pending is None or pending.fingerprint != fingerprint:
            self._problem("host-key", f"not accepting {fingerprint}: it is not the unknown key "
                          f"{self.host.name} presented", "warning")
            return False
        self._problem("host-key", f"accepting {pending.key_type} {fingerprint} for "
                      f"{pending.address}:{pending.port} (your decision); reconnecting", "info")
        self._host_key_reported = None
        await self._run(accept_fingerprint=fingerprint)
        if self.transport is not None:
            self._problem("host-key", f"host key {fingerprint} accepted and saved to "
                          f"{pending.known_hosts}", "info")
        return True

    async def refuse_host_key(self) -> None:
        """The operator refused the unknown key: stay disconnected, known_hosts untouched."""
        pending = self.state.host_key
        if pending is None:
            return
        self._problem("host-key", f"refused {pending.key_type} {pending.fingerprint} for "
                      f"{pending.address}:{pending.port} (your decision): not connected, "
                      f"{pending.known_hosts} unchanged", "info")

    def _on_connection_event(self, transport: Transport, event: ConnectionEvent) -> None:
        if transport is not self.transport:
            return  # a transport given up on still reports its retries and its close
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
            except Exception as exc:
                host_key = _host_key_error(exc)
                if host_key is not None:  # a reconnect met a refused key: retrying is no use
                    self._host_key_refused(host_key)
                    return
                why = _describe(exc)
                self._problem(source, f"{source} failed: {why}; retrying in {backoff:.0f}s")
            if time.monotonic() - started > 60:
                backoff = 1.0
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_S)

    # -- pace: hosts off screen are sampled less often ----------------------------------------

    @property
    def pace(self) -> float:
        """How many times slower than configured this host samples now (1: on screen)."""
        if self.on_screen:
            return 1.0
        ui = self.config.ui
        return max(1.0, ui.offscreen_interval_s / ui.gpu_interval_s)

    def set_pace(self, on_screen: bool, in_detail: bool = True) -> None:
        """Full rate while the host's figures are on screen; `ui.offscreen_interval_s`
        between GPU samples otherwise (status polls and /metrics slow down alike). The GPU
        agent is restarted at the new interval, on the same connection. `in_detail` False:
        on screen as a fleet row only, /metrics every METRICS_ROW_PERIOD_S."""
        self.in_detail = in_detail
        if on_screen == self.on_screen:
            return
        self.on_screen = on_screen
        if self.transport is None or self._closed or not self._loops:
            return
        gpu = self._loops[0]
        gpu.cancel()
        self._loops[0] = self._start_gpu_loop()

    def _start_gpu_loop(self) -> asyncio.Task[None]:
        return self._spawn(self._supervise("gpu", self._gpu_loop), "gpu")

    async def _paced_sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds * self.pace)

    async def _gpu_loop(self, transport: Transport) -> None:
        from console.gpu.models import GpuHeader  # with the agent, after the first frame

        interval = self.config.ui.gpu_interval_s * self.pace
        async for event in adapters.gpu_events(transport, self.host, self.config,
                                               self._gpu_warning, interval):
            self.taps.gpu(event)
            if isinstance(event, GpuHeader):
                self.emit(TopologyUpdate(self.host.name, event))
            else:
                self.emit(GpuUpdate(self.host.name, event, self.state.clock()))

    def _gpu_warning(self, message: str) -> None:
        """The agent's warnings, each said once (a failing counter warns every sample)."""
        if message in self._gpu_warned:
            return
        if len(self._gpu_warned) < 100:
            self._gpu_warned.add(message)
        self._problem("gpu", f"GPU agent: {message}", "warning")

    def _log_crashes(self, events: Sequence[LogEvent]) -> None:
        """A crash in the followed log (an OOM, an NCCL failure, a failed capture, a scheduler
        exception: console/logs/crash_finding.py) is an error in the event log, each once."""
        watch = CrashWatch()
        watch.feed(events)
        found = watch.finding
        if found is None:
            return
        message = f"crash: {found.title}: {found.text}"
        if message in self._crashes_said:
            return
        if len(self._crashes_said) < 100:
            self._crashes_said.add(message)
        self._problem("log", message)

    def aggregator(self) -> StatsAggregator:
        """One StatsAggregator per session: fed by the log's batch lines and /metrics."""
        if self._aggregator is None:
            self._aggregator = adapters.stats_aggregator()
        return self._aggregator

    async def _log_loop(self, transport: Transport) -> None:
        aggregator = self.aggregator()
        last_stats = 0.0
        stats_version = -1
        async for batch in adapters.follow_log(transport, self.host, self.config):
            for notice in batch.notices:
                level = _NOTICE_LEVEL.get(notice.kind, "info")
                detail = f": {notice.detail}" if notice.detail else ""
                self._problem("log", f"log {notice.kind}{detail}", level)
            if batch.events:
                self.taps.log(batch.events)
                self.startup_tap.feed(batch)
                self.emit(LogBatch(self.host.name, tuple(batch.events)))
                aggregator.add_events(batch.events)
                self._log_crashes(batch.events)
            # Stats at most twice a second: the strip's sparklines need no more.
            now = time.monotonic()
            if now - last_stats >= STATS_PERIOD_S:
                snapshot = aggregator.snapshot()
                if snapshot.version != stats_version:
                    stats_version = snapshot.version
                    last_stats = now
                    self.emit(StatsUpdate(self.host.name, snapshot))

    async def _status_loop(self, transport: Transport) -> None:
        # Self-rescheduling: the next poll is planned after this one ends, so polls never overlap.
        # Liveness every STATUS_POLL_S; HTTP health (which writes access lines into the server's
        # log) only until the server is ready, then every HEALTH_POLL_S.
        previous = None
        last_health = -HEALTH_POLL_S
        while True:
            if not self.restart_running:  # the lifecycle reports its own phases meanwhile
                now = time.monotonic()
                ready = previous is not None and previous.state == "ready" \
                    and previous.detail != adapters.NO_ANSWER  # unanswered: ask again now
                check = not ready or now - last_health >= HEALTH_POLL_S
                status, record = await adapters.server_status(
                    transport, self.host, self.config, self.discovery,
                    previous=previous, check_health=check,
                )
                if check:
                    last_health = now
                self.record = record
                if not self.restart_running:
                    previous = status
                    self.emit(status)
            else:
                previous = None  # after a restart, ask HTTP again at once
            self._expire_stats()
            await self._paced_sleep(STATUS_POLL_S)

    def _expire_stats(self) -> None:
        """Age the strip's gen rate out when nothing new arrived (no batch lines when idle)."""
        aggregator = self._aggregator
        if aggregator is not None and aggregator.expire():
            self.emit(StatsUpdate(self.host.name, aggregator.snapshot()))

    # -- commands -----------------------------------------------------------------------------

    @property
    def sweep_running(self) -> bool:
        return self._sweep_task is not None and not self._sweep_task.done()

    @property
    def restart_running(self) -> bool:
        """A restart, or an A/B (which restarts twice), is in progress."""
        return self.ab_running or (
            self._restart_task is not None and not self._restart_task.done()
        )

    @property
    def ab_running(self) -> bool:
        return self._ab_task is not None and not self._ab_task.done()

    def facts(self) -> HostFacts:
        """What the refusal policy (console.server.refusal) looks at, from this session's own
        tasks: they know of a command just started before its events reach the state."""
        connection = self.state.connection
        if self.transport is not None:
            connection = "connected"
        elif connection == "connected":  # the transport was dropped (a refused host key)
            connection = "lost"
        return HostFacts(
            connection=connection,
            server_state=self.state.server_state,
            sweep_running=self.sweep_running,
            ab_running=self.ab_running,
            restart_running=self.restart_running,
            holder=adapters.host_busy(self.host.name),
            profiles=len(self.config.profiles),
        )

    def _refused(self, action: str, source: str, label: str) -> bool:
        """Refuse `action` when the policy says so, as the console's keys would, in the
        host's event log (the keys refuse first; this catches a command that raced them)."""
        why = refusal(action, self.facts())
        if why is None:
            return False
        self._problem(source, f"{label} refused: {why}", "warning")
        return True

    # -- metrics ------------------------------------------------------------------------------

    async def _metrics_loop(self, transport: Transport) -> None:
        """Scrape `/metrics` every ~2 s while the running server has metrics enabled; one
        port forward per server (not per scrape). A failure is reported once until it
        recovers."""
        while True:
            record = self.record
            if (
                record is None
                or not adapters.metrics_enabled(record)
                or self.state.server_state != "ready"
                or not self._may_scrape()
            ):
                await asyncio.sleep(METRICS_PERIOD_S / 2)
                continue
            life = adapters.lifecycle(transport, self.host, discovery=self.discovery)
            try:
                async with life.http(record.port) as client:
                    while self.record is record or (
                        self.record is not None and self.record.pid == record.pid
                    ):
                        if self.state.server_state != "ready" or not self._may_scrape():
                            break
                        await self._scrape(client)
                        await self._metrics_sleep()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the forward itself failed
                self._metrics_failed(exc)
                await asyncio.sleep(METRICS_PERIOD_S)

    async def _metrics_sleep(self) -> None:
        """Until the next scrape, in steps so that a host opened from its row (or a sweep's
        evidence asking for more) is scraped at its new pace without waiting out the old."""
        started = time.monotonic()
        while (left := self.metrics_period - (time.monotonic() - started)) > 0:
            await asyncio.sleep(min(left, METRICS_PERIOD_S / 5))

    @property
    def metrics_period(self) -> float:
        """Seconds between /metrics scrapes now: a sweep's evidence asks for more, a fleet
        row (METRICS_ROW_PERIOD_S) and an off-screen host (the pace) for fewer."""
        own = METRICS_PERIOD_S if self.in_detail or not self.on_screen else METRICS_ROW_PERIOD_S
        return self.taps.metrics_period(own) * self.pace

    def _may_scrape(self) -> bool:
        """Not while a restart runs; during an A/B (whose restarts show in the server state)
        only while one of its passes takes evidence from the session (`_side_evidence`)."""
        if self._restart_task is not None and not self._restart_task.done():
            return False
        return not self.ab_running or self.taps.attached

    async def _scrape(self, client: httpx.AsyncClient) -> None:
        try:
            text, snapshot = await adapters.scrape_metrics(client)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._metrics_failed(exc)
            return
        if self._metrics_failing:
            self._metrics_failing = False
            self._problem("metrics", "/metrics scrape works again", "info")
        self.taps.metrics(text)
        aggregator = self.aggregator()
        aggregator.add_metrics(snapshot)
        self.emit(StatsUpdate(self.host.name, aggregator.snapshot()))

    def _metrics_failed(self, exc: BaseException) -> None:
        if self.state.server_state != "ready" or self.restart_running:
            return  # expected while the server restarts
        if not self._metrics_failing:
            self._metrics_failing = True
            self._problem(
                "metrics", f"/metrics scrape failed: {_describe(exc)} (retrying quietly)",
                "warning",
            )

    async def restart(self, profile: str | None = None) -> None:
        if self._refused("restart", "server", "restart"):
            return
        assert self.transport is not None
        chosen = profile or current_profile(self.state, self.host)
        if chosen is None:
            self._problem("server", "restart refused: no profile configured for this host")
            return
        self._restart_task = self._spawn(self._restart(self.transport, chosen), "restart")

    async def _restart(self, transport: Transport, profile: str) -> None:
        try:
            await self._pass_server_gate()
            await adapters.restart_server(
                transport, self.host, self.config, profile, self.emit, self._gpu_memory,
                self.discovery, self.startup_tap,
            )
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
        if self._refused("sweep", "sweep", "sweep"):
            return
        assert self.transport is not None
        self._sweep_task = self._spawn(self._sweep(self.transport, preset), "sweep")

    async def _sweep(self, transport: Transport, preset: str) -> None:
        profile = current_profile(self.state, self.host)
        try:
            async with self.taps.attach(self._log_head(transport)) as evidence:
                await adapters.run_sweep(
                    transport, self.host, self.config, preset, profile, self.emit,
                    self.store_path, evidence=evidence,
                )
        except asyncio.CancelledError:
            if self.state.sweep.running:
                self.emit(SweepDone(self.host.name, self.state.sweep.run_id or "-", False,
                                    "cancelled"))
            raise
        except Exception as exc:
            if self.state.sweep.running:
                self.emit(SweepDone(self.host.name, self.state.sweep.run_id or "-", False,
                                    _describe(exc)))
            else:  # it never started (host busy, engine unavailable): say why
                self._problem("sweep", f"sweep not started: {_describe(exc)}")

    def _side_evidence(
        self, transport: Transport, record: LaunchRecord
    ) -> AbstractAsyncContextManager[EvidenceSources]:
        """An A/B pass's evidence: the same tees as a sweep's, reading the head of the log of
        the side's server (`record`, just launched). The status poll rests during an A/B, so
        the record is also the one the /metrics scrape follows from now."""
        self.record = record
        path = record.log_path or adapters.current_log_path(self.host)
        return self.taps.attach(adapters.log_head(transport, path))

    def _log_head(self, transport: Transport) -> Callable[[], Awaitable[list[str]]]:
        """One read of the running server's log head (its startup lines)."""
        record = self.record
        path = record.log_path if record is not None and record.log_path else None
        return adapters.log_head(transport, path or adapters.current_log_path(self.host))

    async def cancel_sweep(self) -> None:
        """Cancel the running sweep, or the running A/B (its restart cleans up after itself)."""
        for task in (self._ab_task, self._sweep_task):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    # -- flags, profiles, A/B -----------------------------------------------------------------

    def share_profiles(self, profiles: ProfileSet) -> None:
        """Use the console's profile set from now on (the flags editor adds to it)."""
        self._profiles = profiles

    @property
    def config(self) -> PlateauConfig:
        """The session's config, with the console's profile set once it shares one."""
        if self._profiles is None:
            return self._config
        return self._profiles.applied(self._config)

    async def flag_schema(self, profile: str) -> FlagSchema:
        """The host's discovered flag schema for `profile`'s launch command (cached)."""
        if self.transport is None:
            raise RuntimeError(f"{self.host.name} is not connected")
        if profile not in self.config.profiles:
            raise ValueError(f"unknown profile {profile!r}")
        return await adapters.flag_schema(
            self.transport, self.host, self.config.profiles[profile], self.discovery
        )

    async def server_record(self) -> LaunchRecord | None:
        """The running server's launch record (None when nothing runs)."""
        if self.transport is None:
            return None
        _status, record = await adapters.server_status(
            self.transport, self.host, self.config, self.discovery
        )
        self.record = record
        return record

    async def start_ab(self, request: ABRequest) -> None:
        if self._refused("ab", "ab", "A/B"):
            return
        assert self.transport is not None
        self._ab_task = self._spawn(self._ab(self.transport, request), "ab")

    def tune_bench(self, store: RunStore) -> TuneBench:
        """The tune job's bench on this host: restarts through the lifecycle (waiting for the
        GPU memory this session sees come back), sweeps stored in `store` with this session's
        evidence taps."""
        from console.errors import PlateauError
        from console.jobs.tune_bench import HostBench

        if self.transport is None:
            raise PlateauError(f"{self.host.name} is not connected")
        transport = self.transport
        life = adapters.lifecycle(transport, self.host, gpu_probe=self._gpu_memory,
                                  discovery=self.discovery, startup_log=self.startup_tap)
        # Its sweeps observe the host through this session's agent, follower and scrape (one
        # set of observers per host), as the console's sweeps and A/Bs do.
        return HostBench(life, store,
                         evidence=partial(self._side_evidence, transport))

    async def _ab(self, transport: Transport, request: ABRequest) -> None:
        a, b, preset = request.a, request.b, request.preset

        def progress(p: ABProgress) -> None:
            if p.stage != "done":
                self.emit(ABUpdate(self.host.name, p.stage, a, b, preset, p.message))

        progress_stage = ABUpdate(self.host.name, "validate", a, b, preset, "starting")
        self.emit(progress_stage)
        try:
            await self._pass_server_gate()
            result = await adapters.run_ab(
                transport, self.host, self.config, request, self.emit, progress,
                self.store_path, self._gpu_memory, self.discovery,
                evidence=partial(self._side_evidence, transport), startup_log=self.startup_tap,
            )
        except asyncio.CancelledError:
            if self.state.sweep.running:
                self.emit(SweepDone(self.host.name, self.state.sweep.run_id or "-", False,
                                    "cancelled"))
            self.emit(ABUpdate(self.host.name, "cancelled", a, b, preset, "cancelled"))
            raise
        except Exception as exc:
            self.emit(ABUpdate(self.host.name, "failed", a, b, preset, _describe(exc)))
            return
        self.emit(ABUpdate(self.host.name, "done", a, b, preset, result.note, result))
        with contextlib.suppress(Exception):  # a summary line; the compare screen has it all
            rows = adapters.delta_rows(result)[1:]
            deltas = ", ".join(f"c={r[0]} {r[3]} {r[4]}" for r in rows)
            self._problem("ab", f"{b} vs {a}, {result.metric}: {deltas or 'no common steps'}",
                          "info")

    async def close(self) -> None:
        self._closed = True
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for transport in [*self._dropped, self.transport]:
            if transport is not None:
                with contextlib.suppress(Exception):
                    await transport.close()
        self.emit(ConnectionChanged(self.host.name, "closed"))
        self.end_events()


async def _close_quietly(transport: Transport) -> None:
    with contextlib.suppress(Exception):
        await transport.close()


def _host_key_error(exc: BaseException) -> HostKeyError | None:
    """The HostKeyError behind `exc`, if any (collectors may wrap transport errors)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, HostKeyError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:300]

