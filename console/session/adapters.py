"""Narrow adapters from the session to the other core areas (host, gpu, logs, server, bench).

Each function is the one place the session touches another area's API, so when that API moves
only this file changes. An area that is not importable raises AdapterMissing, which the session
reports once in the event log instead of failing silently.
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from console.config_models import HostConfig, PlateauConfig
from console.host.transport import Transport


class AdapterMissing(RuntimeError):
    """Another area's module is not available (yet): the feature is off, said once."""


def _module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and name.startswith(exc.name):
            raise AdapterMissing(f"{name} is not available") from None
        raise


# -- transport ------------------------------------------------------------------------------


def open_transport(host: HostConfig) -> Transport:
    """LocalTransport for `local = true` hosts, SshTransport otherwise (not yet connected)."""
    factory = _module("console.host.factory")
    return factory.transport_for(host)  # type: ignore[no-any-return]


def run_dir(host: HostConfig) -> str:
    return host.run_dir.rstrip("/") or "/"


def current_log_path(host: HostConfig) -> str:
    return f"{run_dir(host)}/current.log"


# -- GPU telemetry --------------------------------------------------------------------------


async def gpu_events(
    transport: Transport, host: HostConfig, config: PlateauConfig
) -> AsyncIterator[Any]:
    """console.gpu's collector: a GpuHeader (once per connection), then GpuSamples.

    The simulated backend is used for hosts whose config names a sim state file (the demo)."""
    collector_mod = _module("console.gpu.collector")
    options = collector_mod.AgentOptions(
        backend="sim" if host.sim_state_file else "auto",
        interval=config.ui.gpu_interval_s,
        python=host.python,
        sim_state=host.sim_state_file,
    )
    async with collector_mod.GpuCollector(transport, options) as collector:
        async for event in collector:
            yield event


def is_gpu_header(event: Any) -> bool:
    from console.gpu.models import GpuHeader

    return isinstance(event, GpuHeader)


# -- logs -----------------------------------------------------------------------------------


async def follow_log(
    transport: Transport, host: HostConfig, config: PlateauConfig
) -> AsyncIterator[Any]:
    """console.logs' follower on `<run_dir>/current.log`: FollowBatch(events, notices), batched
    every ~150 ms, resuming at the exact byte after a dropped connection."""
    follower_mod = _module("console.logs.follower")
    follower = follower_mod.LogFollower(
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


def stats_aggregator() -> Any:
    """Rolling server stats (console.logs.server_stats) fed from log batches."""
    return _module("console.logs.server_stats").StatsAggregator()


# -- server lifecycle -----------------------------------------------------------------------

Emit = Callable[[Any], None]


def lifecycle(transport: Transport, host: HostConfig, gpu_probe: Any = None) -> Any:
    module = _module("console.server.lifecycle")
    return module.ServerLifecycle(transport, host, gpu_probe=gpu_probe)


async def server_status(transport: Transport, host: HostConfig, config: PlateauConfig) -> Any:
    """console.server's status, as a session ServerStatus event."""
    from console.session.events import ServerStatus

    status = await lifecycle(transport, host).status()
    record = status.record
    if not status.running:
        state = "failed" if record is not None and record.state == "failed" else "stopped"
    else:
        state = {"ready": "ready", "starting": "starting", "unhealthy": "failed"}.get(
            status.health, "starting"
        )
    return ServerStatus(
        host=host.name,
        state=state,  # type: ignore[arg-type]
        version=status.version,
        profile=record.profile if record is not None else None,
        since=record.started_at if record is not None and status.running else None,
        detail=status.detail or ("" if status.health != "unhealthy" else "health check failed"),
        pid=record.pid if record is not None else None,
    )


def lifecycle_sink(host: str, emit: Emit) -> Callable[[Any], None]:
    """Lifecycle events (phases, failures) -> session events, so restarts show progress."""
    from console.server import events as lev
    from console.session.events import Problem, ServerStatus

    def sink(event: Any) -> None:
        if isinstance(event, lev.PhaseStarted):
            stopping = event.phase in (lev.Phase.STOP, lev.Phase.VERIFY_STOPPED)
            state = "stopping" if stopping else "starting"
            detail = f"{event.phase.value} {event.message}".strip()
            if event.phase != lev.Phase.VALIDATE:
                emit(ServerStatus(host, state, detail=detail))
        elif isinstance(event, lev.PhaseProgress) and event.step is not None:
            emit(ServerStatus(host, "starting", detail=f"{event.step.value}: {event.message}"))
        elif isinstance(event, lev.CommandShown):
            emit(Problem(host, "server", f"launching: {event.command}", level="info"))
        elif isinstance(event, lev.LifecycleFailed):
            lines = "; ".join(event.log_lines[-3:])
            emit(Problem(host, "server", f"{event.phase.value} failed: {event.reason}"
                         + (f" — {lines}" if lines else "")))
            emit(ServerStatus(host, "failed", detail=event.reason))
        elif isinstance(event, lev.LifecycleDone):
            emit(Problem(host, "server", f"{event.action} done: {event.message}", level="info"))

    return sink


async def restart_server(
    transport: Transport, host: HostConfig, config: PlateauConfig, profile: str, emit: Emit,
    gpu_probe: Any = None,
) -> None:
    if profile not in config.profiles:
        raise ValueError(f"unknown profile {profile!r}")
    life = lifecycle(transport, host, gpu_probe)
    await life.restart(profile, config.profiles[profile], lifecycle_sink(host.name, emit))


async def start_server(
    transport: Transport, host: HostConfig, config: PlateauConfig, profile: str, emit: Emit
) -> None:
    life = lifecycle(transport, host)
    await life.start(profile, config.profiles[profile], lifecycle_sink(host.name, emit))


async def stop_server(transport: Transport, host: HostConfig, emit: Emit) -> None:
    await lifecycle(transport, host).stop(lifecycle_sink(host.name, emit))


# -- sweeps ---------------------------------------------------------------------------------


def default_store_path() -> Any:
    return _module("console.store.db").default_db_path()


async def run_sweep(
    transport: Transport,
    host: HostConfig,
    config: PlateauConfig,
    preset: str,
    profile: str | None,
    emit: Emit,
    store_path: Any = None,
) -> None:
    """A console.bench sweep (native engine) through a port forward to the host's server;
    every finished step is committed to the run store before the next begins."""
    from console.session.events import SweepDone, SweepPointDone, SweepProgress

    sweep_mod = _module("console.bench.sweep")
    engines = _module("console.bench.engines")
    store_mod = _module("console.store.db")
    store_models = _module("console.store.models")
    if profile is None or profile not in config.profiles:
        raise ValueError(f"no server profile to sweep against (host profile: {profile!r})")
    server = config.profiles[profile]
    spec = config.sweep(preset)
    if spec.engine != "native":
        spec = spec.model_copy(update={"engine": "native"})
        emit(_info(host.name, "sweep", "the console runs sweeps with the native engine"))
    run_id = "-"

    def on_event(event: Any) -> None:
        nonlocal run_id
        kind = getattr(event, "kind", "")
        if kind == "sweep-started":
            run_id = str(event.run_id) if event.run_id is not None else "live"
            emit(SweepProgress(host.name, run_id, 0, event.total_steps))
        elif kind == "step-started":
            emit(SweepProgress(host.name, run_id, event.index + 1, event.total_steps,
                               event.concurrency))
        elif kind in ("step-finished", "step-failed"):
            emit(SweepPointDone(host.name, run_id, event.result))
        elif kind == "sweep-finished":
            emit(SweepDone(host.name, run_id, event.status == "finished", event.status))

    store = store_mod.RunStore(store_path)
    meta = store_models.RunMeta(
        host=host.name, profile=profile, flags=dict(server.flags), label=f"{profile} ({preset})"
    )
    try:
        async with sweep_mod.server_url(transport=transport, port=server.port) as base_url:
            await sweep_mod.run_sweep(
                spec, base_url, engine=engines.NativeEngine(), store=store, meta=meta,
                on_event=on_event,
            )
    finally:
        store.close()


def _info(host: str, source: str, message: str) -> Any:
    from console.session.events import Problem

    return Problem(host, source, message, level="info")
