"""The session's joins to the other core areas (host, gpu, logs, server, jobs, store).

Each function is the one place the session touches another area's API and turns that area's
typed output into session events, so when that API moves only this file changes. Work that
holds the host (sweeps, A/B, start/stop/restart) is console.jobs', shared with the CLI.
The other areas are imported by the functions that use them, when the session first does:
the console's first frame needs none of them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from console.host.transport import Transport
from console.session.events import (
    Problem,
    ServerStateName,
    ServerUpdate,
    SessionEvent,
    SweepDone,
    SweepPointDone,
    SweepProgress,
)

if TYPE_CHECKING:
    import httpx

    from console.bench.models import SweepEvent
    from console.config_models import HostConfig, PlateauConfig, ServerProfile
    from console.diagnose.sources import EvidenceSources
    from console.gpu.models import GpuHeader, GpuSample
    from console.jobs.ab import EvidenceFor
    from console.jobs.ab_models import ABProgress, ABRequest, ABResult
    from console.jobs.server import GpuMemoryProbe
    from console.logs.follower import FollowBatch
    from console.logs.metrics import MetricsSnapshot
    from console.logs.server_stats import StatsAggregator
    from console.server import events as lev
    from console.server.discovery import FlagDiscovery
    from console.server.flags import FlagSchema
    from console.server.lifecycle import ServerLifecycle
    from console.server.records import LaunchRecord
    from console.server.startup_log import StartupLog

Emit = Callable[[SessionEvent], None]

# -- transport ------------------------------------------------------------------------------


def open_transport(host: HostConfig, *, accept_fingerprint: str | None = None) -> Transport:
    from console.host.factory import transport_for
    """LocalTransport for `local = true` hosts, SshTransport otherwise (not yet connected).
    `accept_fingerprint` accepts exactly that unknown host key and saves it to known_hosts."""
    return transport_for(host, accept_fingerprint=accept_fingerprint)


def run_dir(host: HostConfig) -> str:
    return host.run_dir.rstrip("/") or "/"


def current_log_path(host: HostConfig) -> str:
    return f"{run_dir(host)}/current.log"


# -- GPU telemetry --------------------------------------------------------------------------


async def gpu_events(
    transport: Transport, host: HostConfig, config: PlateauConfig,
    on_warning: Callable[[str], None] | None = None, interval: float | None = None,
) -> AsyncIterator[GpuHeader | GpuSample]:
    """console.gpu's collector: a GpuHeader (once per connection), then GpuSamples; the
    agent's warnings (e.g. a counter the GPU does not support) go to `on_warning`.

    The simulated backend is used for hosts whose config names a sim state file (the demo)."""
    from console.gpu.collector import AgentOptions, GpuCollector

    options = AgentOptions(
        backend="sim" if host.sim_state_file else "auto",
        interval=interval or config.ui.gpu_interval_s,
        python=host.python,
        sim_state=host.sim_state_file,
    )
    async with GpuCollector(transport, options, on_warning) as collector:
        async for event in collector:
            yield event


# -- logs -----------------------------------------------------------------------------------


async def follow_log(
    transport: Transport, host: HostConfig, config: PlateauConfig
) -> AsyncIterator[FollowBatch]:
    """console.logs' follower on `<run_dir>/current.log`: FollowBatch(events, notices), batched
    every ~150 ms, resuming at the exact byte after a dropped connection."""
    from console.logs.follower import LogFollower

    follower = LogFollower(
        transport,
        current_log_path(host),
        start_lines=config.ui.log_tail_lines,
        python=host.python,
    )
    try:
        async for batch in follower:
            yield batch
    finally:
        await follower.close()


def log_head(transport: Transport, path: str) -> Callable[[], Awaitable[list[str]]]:
    """A one-shot read of the head of the log at `path` (the startup lines a sweep's
    diagnosis reads; console.diagnose.sources)."""
    from console.diagnose.sources import RemoteLog

    return RemoteLog(transport, path).read_new


def stats_aggregator() -> StatsAggregator:
    """Rolling server stats (console.logs.server_stats) fed from log batches."""
    from console.logs.server_stats import StatsAggregator

    return StatsAggregator()


# -- server lifecycle -----------------------------------------------------------------------


def flag_discovery(
    transport: Transport, host: HostConfig, cache_dir: Path | None = None
) -> FlagDiscovery:
    """console.server's flag discovery (cached per host, SGLang version and launch command)."""
    from console.server.discovery import FlagDiscovery

    return FlagDiscovery(transport, host, cache_dir=cache_dir)


def lifecycle(
    transport: Transport,
    host: HostConfig,
    gpu_probe: GpuMemoryProbe | None = None,
    discovery: FlagDiscovery | None = None,
    startup_log: StartupLog | None = None,
) -> ServerLifecycle:
    """The host's lifecycle; `startup_log`: where its launches' startup lines come from (the
    session's follower), else a follower of its own per launch."""
    from console.jobs import server as server_jobs

    return server_jobs.lifecycle_for(transport, host, gpu_probe=gpu_probe, discovery=discovery,
                                     startup_log=startup_log)


NO_ANSWER = "not answering HTTP: the last health check got no answer"
_HEALTH_STATE: dict[str, ServerStateName] = {
    "ready": "ready", "starting": "starting", "unhealthy": "failed",
}


async def server_status(
    transport: Transport,
    host: HostConfig,
    config: PlateauConfig,
    discovery: FlagDiscovery | None = None,
    *,
    previous: ServerUpdate | None = None,
    check_health: bool = True,
) -> tuple[ServerUpdate, LaunchRecord | None]:
    """console.server's status, as (a session ServerUpdate event, the launch record or None).

    Without `check_health` only liveness is asked (no HTTP, so no access line in the server's
    log); a live process then keeps the state of `previous` (the last ServerUpdate event)."""
    known_version = previous.version if previous is not None else None
    status = await lifecycle(transport, host, discovery=discovery).status(
        check_health=check_health, known_version=known_version
    )
    record = status.record
    state: ServerStateName
    no_answer = ""
    if not status.running:
        state = "failed" if record is not None and record.state == "failed" else "stopped"
    elif status.health == "unchecked":
        state = previous.state if previous is not None else "starting"
    elif status.health == "down" and previous is not None and previous.state == "ready":
        # Alive and ready before: a health check with no answer (a hung or swamped server,
        # a loaded host) is news about a ready server, not a server starting again.
        state, no_answer = "ready", NO_ANSWER
    else:
        state = _HEALTH_STATE.get(status.health, "starting")
    event = ServerUpdate(
        host=host.name,
        state=state,
        version=status.version,
        profile=record.profile if record is not None else None,
        since=record.started_at if record is not None and status.running else None,
        detail=status.detail or no_answer
        or ("" if status.health != "unhealthy" else "health check failed"),
        pid=record.pid if record is not None else None,
        argv=(tuple(record.argv) if record is not None and status.running
              and record.origin == "launched" else None),
    )
    return event, (record if status.running else None)


def lifecycle_sink(host: str, emit: Emit, profile: str | None = None) -> lev.EventSink:
    """Lifecycle events (phases, failures) -> session events, so restarts show progress.
    `profile` names what is being launched, so the header shows it as soon as it is ready."""

    from console.server import events as lev

    def sink(event: lev.LifecycleEvent) -> None:
        if isinstance(event, lev.PhaseStarted):
            stopping = event.phase in (lev.Phase.STOP, lev.Phase.VERIFY_STOPPED)
            detail = f"{event.phase.value} {event.message}".strip()
            if event.phase != lev.Phase.VALIDATE:
                emit(ServerUpdate(host, "stopping" if stopping else "starting", detail=detail))
        elif isinstance(event, lev.PhaseProgress) and event.step is not None:
            emit(ServerUpdate(host, "starting", detail=f"{event.step.value}: {event.message}"))
        elif isinstance(event, lev.CommandShown):
            emit(Problem(host, "server", f"launching: {event.command}", level="info"))
        elif isinstance(event, lev.LifecycleFailed):
            lines = "; ".join(event.log_lines[-3:])
            emit(Problem(host, "server", f"{event.phase.value} failed: {event.reason}"
                         + (f" — {lines}" if lines else "")))
            emit(ServerUpdate(host, "failed", detail=event.reason))
        elif isinstance(event, lev.LifecycleDone):
            emit(Problem(host, "server", f"{event.action} done: {event.message}", level="info"))
            if event.action in ("start", "restart"):  # don't wait for the next status poll
                emit(ServerUpdate(host, "ready", version=event.version, profile=profile,
                                  detail=event.message))

    return sink


async def restart_server(
    transport: Transport, host: HostConfig, config: PlateauConfig, profile: str, emit: Emit,
    gpu_probe: GpuMemoryProbe | None = None, discovery: FlagDiscovery | None = None,
    startup_log: StartupLog | None = None,
) -> None:
    from console.jobs import server as server_jobs

    life = lifecycle(transport, host, gpu_probe, discovery, startup_log)
    await server_jobs.restart(life, config, profile, lifecycle_sink(host.name, emit, profile))


async def start_server(
    transport: Transport, host: HostConfig, config: PlateauConfig, profile: str, emit: Emit,
    discovery: FlagDiscovery | None = None, startup_log: StartupLog | None = None,
) -> None:
    from console.jobs import server as server_jobs

    life = lifecycle(transport, host, discovery=discovery, startup_log=startup_log)
    await server_jobs.start(life, config, profile, lifecycle_sink(host.name, emit, profile))


async def stop_server(transport: Transport, host: HostConfig, emit: Emit) -> None:
    from console.jobs import server as server_jobs

    await server_jobs.stop(lifecycle(transport, host), lifecycle_sink(host.name, emit))


def host_busy(host: str) -> str | None:
    """What holds the host's lease in this process (a sweep, a restart, an A/B), or None."""
    from console.server.lease import host_lease

    holder = host_lease(host).holder
    return holder.purpose if holder is not None else None


async def flag_schema(
    transport: Transport,
    host: HostConfig,
    profile: ServerProfile,
    discovery: FlagDiscovery | None = None,
) -> FlagSchema:
    """The host's flag schema for `profile`'s launch command (discovery caches it)."""
    disc = discovery if discovery is not None else flag_discovery(transport, host)
    return await disc.schema_for(profile)


def running_flags(record: LaunchRecord | None, schema: FlagSchema) -> dict[str, str] | None:
    """Flags of the running server (its launch record's argv), for the editor's diff."""
    if record is None:
        return None
    from console.server.profile_edit import flags_from_argv

    return flags_from_argv(record.argv, schema)


def display_command(profile: ServerProfile) -> str:
    """`env A=1 prog args` as the lifecycle shows it before launching (secrets redacted)."""
    from console.server.records import display_command as records_display_command

    return records_display_command(profile.argv(), profile.env)


def metrics_enabled(record: LaunchRecord | None) -> bool:
    return record is not None and "--enable-metrics" in record.argv


async def scrape_metrics(client: httpx.AsyncClient) -> tuple[str, MetricsSnapshot]:
    """GET /metrics through the lifecycle's client: the page (a sweep's evidence reads it)
    and its console.logs MetricsSnapshot."""
    from console.logs.metrics import parse_metrics

    response = await client.get("/metrics")
    if response.status_code != 200:
        raise RuntimeError(f"/metrics answered HTTP {response.status_code}")
    return response.text, parse_metrics(response.text)


# -- sweeps ---------------------------------------------------------------------------------


def sweep_event_sink(host: str, emit: Emit) -> Callable[[SweepEvent], None]:
    """console.bench sweep events -> session sweep events."""
    from console.bench.models import (
        StepFailed,
        StepFinished,
        StepStarted,
        SweepFinished,
        SweepStarted,
    )

    run_id = "-"

    def on_event(event: SweepEvent) -> None:
        nonlocal run_id
        if isinstance(event, SweepStarted):
            run_id = str(event.run_id) if event.run_id is not None else "live"
            emit(SweepProgress(host, run_id, 0, event.total_steps))
        elif isinstance(event, StepStarted):
            emit(SweepProgress(host, run_id, event.index + 1, event.total_steps,
                               event.concurrency))
        elif isinstance(event, StepFinished | StepFailed):
            emit(SweepPointDone(host, run_id, event.result))
        elif isinstance(event, SweepFinished):
            emit(SweepDone(host, run_id, event.status == "finished", event.status))

    return on_event


async def run_sweep(
    transport: Transport,
    host: HostConfig,
    config: PlateauConfig,
    preset: str,
    profile: str | None,
    emit: Emit,
    store_path: Path | None = None,
    evidence: EvidenceSources | None = None,
) -> None:
    """console.jobs' sweep of the preset against the host's server of `profile`; its
    evidence from `evidence` (the session's tees), else from standalone observers."""
    if profile is None or profile not in config.profiles:
        raise ValueError(f"no server profile to sweep against (host profile: {profile!r})")
    # The sweep and A/B machinery (engines, load workers, SSH targets) is imported when a job
    # first runs, not when the console starts.
    from console.jobs import sweep as sweep_jobs
    from console.jobs.target import on_host
    from console.store.db import RunStore

    store = RunStore(store_path)
    try:
        async with on_host(transport, host, profile, config.profiles[profile]) as target:
            await sweep_jobs.sweep(
                target, config.sweep(preset), store=store,
                label=sweep_jobs.run_label(target, preset),
                on_event=sweep_event_sink(host.name, emit), evidence=evidence,
            )
    finally:
        store.close()


# -- A/B ------------------------------------------------------------------------------------


async def run_ab(
    transport: Transport,
    host: HostConfig,
    config: PlateauConfig,
    request: ABRequest,
    emit: Emit,
    on_progress: Callable[[ABProgress], None],
    store_path: Path | None = None,
    gpu_probe: GpuMemoryProbe | None = None,
    discovery: FlagDiscovery | None = None,
    evidence: EvidenceFor | None = None,
    startup_log: StartupLog | None = None,
) -> ABResult:
    """console.jobs.ab: the request's repeats of A and B (interleaved or not) -> an ABResult
    with its verdict, each side stored as one run and the pair with its verdict; each pass's
    evidence from `evidence` (the session's tees), else from standalone observers."""
    from console.jobs.ab import profile_sweep
    from console.jobs.ab import run_ab as run_ab_job
    from console.store.db import RunStore

    a, b, preset = request.a, request.b, request.preset
    for name in (a, b):
        if name not in config.profiles:
            raise ValueError(f"unknown profile {name!r}")
    life = lifecycle(transport, host, gpu_probe, discovery, startup_log)
    spec = request.spec(config.sweep(preset))
    launching = [a]  # the profile being restarted into, so the header names it when ready

    def progress(p: ABProgress) -> None:
        if p.profile is not None:
            launching[0] = p.profile
        on_progress(p)

    def lifecycle_event(event: lev.LifecycleEvent) -> None:
        lifecycle_sink(host.name, emit, launching[0])(event)

    store = RunStore(store_path)
    try:
        sweep = profile_sweep(
            life, spec, store=store, on_sweep_event=sweep_event_sink(host.name, emit),
            label_for=lambda name: f"A/B {name} ({preset})", evidence=evidence,
        )
        return await run_ab_job(
            life, (a, config.profiles[a]), (b, config.profiles[b]), sweep,
            on_progress=progress, on_event=lifecycle_event, repeats=request.repeats,
            interleave=request.interleave, store=store, preset=preset,
        )
    finally:
        store.close()


def delta_rows(result: ABResult) -> Sequence[tuple[str, ...]]:
    from console.jobs.ab import delta_table

    return delta_table(result)
