"""Narrow adapters from the session to the other core areas (host, gpu, logs, server, bench).

Each function is the one place the session touches another area's API, so when that API moves
only this file changes. An area that is not importable raises AdapterMissing, which the session
reports once in the event log instead of failing silently.
"""

from __future__ import annotations

import importlib
import os
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


def open_transport(host: HostConfig, *, accept_fingerprint: str | None = None) -> Transport:
    """LocalTransport for `local = true` hosts, SshTransport otherwise (not yet connected).
    `accept_fingerprint` accepts exactly that unknown host key and saves it to known_hosts."""
    factory = _module("console.host.factory")
    return factory.transport_for(  # type: ignore[no-any-return]
        host, accept_fingerprint=accept_fingerprint
    )


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


def flag_discovery(transport: Transport, host: HostConfig, cache_dir: Any = None) -> Any:
    """console.server's flag discovery (cached per host, SGLang version and launch command)."""
    module = _module("console.server.discovery")
    return module.FlagDiscovery(transport, host, cache_dir=cache_dir)


def lifecycle(
    transport: Transport, host: HostConfig, gpu_probe: Any = None, discovery: Any = None
) -> Any:
    module = _module("console.server.lifecycle")
    return module.ServerLifecycle(transport, host, gpu_probe=gpu_probe, discovery=discovery)


async def server_status(
    transport: Transport,
    host: HostConfig,
    config: PlateauConfig,
    discovery: Any = None,
    *,
    previous: Any = None,
    check_health: bool = True,
) -> tuple[Any, Any]:
    """console.server's status, as (a session ServerStatus event, the launch record or None).

    Without `check_health` only liveness is asked (no HTTP, so no access line in the server's
    log); a live process then keeps the state of `previous` (the last ServerStatus event)."""
    from console.session.events import ServerStatus

    known_version = getattr(previous, "version", None)
    status = await lifecycle(transport, host, discovery=discovery).status(
        check_health=check_health, known_version=known_version
    )
    record = status.record
    if not status.running:
        state = "failed" if record is not None and record.state == "failed" else "stopped"
    elif status.health == "unchecked":
        state = getattr(previous, "state", None) or "starting"
    else:
        state = {"ready": "ready", "starting": "starting", "unhealthy": "failed"}.get(
            status.health, "starting"
        )
    event = ServerStatus(
        host=host.name,
        state=state,  # type: ignore[arg-type]
        version=status.version,
        profile=record.profile if record is not None else None,
        since=record.started_at if record is not None and status.running else None,
        detail=status.detail or ("" if status.health != "unhealthy" else "health check failed"),
        pid=record.pid if record is not None else None,
    )
    return event, (record if status.running else None)


def lifecycle_sink(
    host: str, emit: Emit, profile: str | None = None
) -> Callable[[Any], None]:
    """Lifecycle events (phases, failures) -> session events, so restarts show progress.
    `profile` names what is being launched, so the header shows it as soon as it is ready."""
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
            if event.action in ("start", "restart"):  # don't wait for the next status poll
                emit(ServerStatus(host, "ready", profile=profile, detail=event.message))

    return sink


async def restart_server(
    transport: Transport, host: HostConfig, config: PlateauConfig, profile: str, emit: Emit,
    gpu_probe: Any = None, discovery: Any = None,
) -> None:
    if profile not in config.profiles:
        raise ValueError(f"unknown profile {profile!r}")
    life = lifecycle(transport, host, gpu_probe, discovery)
    await life.restart(
        profile, config.profiles[profile], lifecycle_sink(host.name, emit, profile)
    )


async def start_server(
    transport: Transport, host: HostConfig, config: PlateauConfig, profile: str, emit: Emit,
    discovery: Any = None,
) -> None:
    life = lifecycle(transport, host, discovery=discovery)
    await life.start(profile, config.profiles[profile], lifecycle_sink(host.name, emit, profile))


async def stop_server(transport: Transport, host: HostConfig, emit: Emit) -> None:
    await lifecycle(transport, host).stop(lifecycle_sink(host.name, emit))


def host_busy(host: str) -> str | None:
    """What holds the host's lease in this process (a sweep, a restart, an A/B), or None."""
    lease = _module("console.server.lease").host_lease(host)
    return lease.holder.purpose if lease.holder is not None else None


async def flag_schema(
    transport: Transport, host: HostConfig, profile: Any, discovery: Any = None
) -> Any:
    """The host's flag schema for `profile`'s launch command (discovery caches it)."""
    disc = discovery if discovery is not None else flag_discovery(transport, host)
    return await disc.schema_for(profile)


def running_flags(record: Any, schema: Any) -> dict[str, str] | None:
    """Flags of the running server (its launch record's argv), for the editor's diff."""
    if record is None:
        return None
    return _module("console.server.profile_edit").flags_from_argv(record.argv, schema)  # type: ignore[no-any-return]


def display_command(profile: Any) -> str:
    """`env A=1 prog args` as the lifecycle shows it before launching (secrets redacted)."""
    records = _module("console.server.records")
    return records.display_command(profile.argv(), profile.env)  # type: ignore[no-any-return]


def metrics_enabled(record: Any) -> bool:
    return record is not None and "--enable-metrics" in record.argv


async def scrape_metrics(client: Any) -> Any:
    """GET /metrics through the lifecycle's client; a console.logs MetricsSnapshot."""
    response = await client.get("/metrics")
    if response.status_code != 200:
        raise RuntimeError(f"/metrics answered HTTP {response.status_code}")
    return _module("console.logs.metrics").parse_metrics(response.text)


# -- sweeps ---------------------------------------------------------------------------------


def default_store_path() -> Any:
    return _module("console.store.db").default_db_path()


class SweepSetupError(RuntimeError):
    """The sweep cannot start (e.g. the bench-serving engine needs SGLang on the host)."""


_HAS_SGLANG = "import importlib.util as u, sys; sys.exit(0 if u.find_spec('sglang') else 3)"


async def make_engine(transport: Transport, host: HostConfig, spec: Any, server: Any) -> Any:
    """The preset's engine: native (this machine) or SGLang's bench_serving (on the host)."""
    engines = _module("console.bench.engines")
    if spec.engine == "native":
        return engines.NativeEngine(headers=_auth_headers(server))
    result = await transport.run([host.python, "-c", _HAS_SGLANG], timeout=60.0)
    if result.exit_status == 3:
        raise SweepSetupError(
            f"engine bench-serving needs SGLang on {host.name}, but {host.python} cannot "
            "import sglang; set the host's python to the server's environment or use "
            "engine = \"native\""
        )
    if not result.ok:
        why = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no output"]
        raise SweepSetupError(f"cannot run {host.python} on {host.name}: {why[0][:200]}")
    bench = _module("console.bench.bench_serving")
    return bench.BenchServingEngine(
        transport,
        host_base_url=f"http://127.0.0.1:{server.port}",
        python=host.python,
        tokenizer=server.model_path,
        workdir=run_dir(host),
    )


def _auth_headers(profile: Any) -> tuple[tuple[str, str], ...]:
    """`Authorization` for a profile whose server wants an API key (`api_key_env` names a
    variable of this machine's environment; the key is never stored)."""
    name = getattr(profile, "api_key_env", None)
    if not name:
        return ()
    key = os.environ.get(name)
    if not key:
        raise SweepSetupError(f"the server wants an API key, but ${name} is not set here")
    return (("Authorization", f"Bearer {key}"),)


def sweep_event_sink(host: str, emit: Emit, run_id: list[str]) -> Callable[[Any], None]:
    """console.bench sweep events -> session sweep events (`run_id` is filled in)."""
    from console.session.events import SweepDone, SweepPointDone, SweepProgress

    def on_event(event: Any) -> None:
        kind = getattr(event, "kind", "")
        if kind == "sweep-started":
            run_id[0] = str(event.run_id) if event.run_id is not None else "live"
            emit(SweepProgress(host, run_id[0], 0, event.total_steps))
        elif kind == "step-started":
            emit(SweepProgress(host, run_id[0], event.index + 1, event.total_steps,
                               event.concurrency))
        elif kind in ("step-finished", "step-failed"):
            emit(SweepPointDone(host, run_id[0], event.result))
        elif kind == "sweep-finished":
            emit(SweepDone(host, run_id[0], event.status == "finished", event.status))

    return on_event


async def sweep_profile(
    transport: Transport,
    host: HostConfig,
    spec: Any,
    profile_name: str,
    server: Any,
    emit: Emit,
    store_path: Any = None,
    *,
    label: str,
    log_tail: Any = None,
) -> list[Any]:
    """One sweep of `spec` against the host's server of `server` (a ServerProfile) through a
    port forward, holding the host's lease; each finished step is committed before the next.
    Returns the step results."""
    sweep_mod = _module("console.bench.sweep")
    store_mod = _module("console.store.db")
    store_models = _module("console.store.models")
    lease = _module("console.server.lease").host_lease(host.name)
    async with lease.hold(f"sweep {label}", transport=transport, host=host):
        engine = await make_engine(transport, host, spec, server)
        store = store_mod.RunStore(store_path)
        meta = store_models.RunMeta(
            host=host.name, profile=profile_name, flags=dict(server.flags), label=label
        )
        try:
            async with sweep_mod.server_url(transport=transport, port=server.port) as base_url:
                finished = await sweep_mod.run_sweep(
                    spec, base_url, engine=engine, store=store, meta=meta,
                    on_event=sweep_event_sink(host.name, emit, ["-"]), log_tail=log_tail,
                )
        finally:
            store.close()
    return list(finished.steps)


async def run_sweep(
    transport: Transport,
    host: HostConfig,
    config: PlateauConfig,
    preset: str,
    profile: str | None,
    emit: Emit,
    store_path: Any = None,
    log_tail: Any = None,
) -> None:
    """A console.bench sweep with the preset's engine against the host's server."""
    if profile is None or profile not in config.profiles:
        raise ValueError(f"no server profile to sweep against (host profile: {profile!r})")
    await sweep_profile(
        transport, host, config.sweep(preset), profile, config.profiles[profile], emit,
        store_path, label=f"{profile} ({preset})", log_tail=log_tail,
    )


# -- A/B ------------------------------------------------------------------------------------


async def run_ab(
    transport: Transport,
    host: HostConfig,
    config: PlateauConfig,
    names: tuple[str, str],
    preset: str,
    emit: Emit,
    on_progress: Callable[[Any], None],
    store_path: Any = None,
    gpu_probe: Any = None,
    discovery: Any = None,
) -> Any:
    """console.server.ab: restart into A, sweep, restart into B, sweep -> an ABResult."""
    ab = _module("console.server.ab")
    for name in names:
        if name not in config.profiles:
            raise ValueError(f"unknown profile {name!r}")
    life = lifecycle(transport, host, gpu_probe, discovery)
    spec = config.sweep(preset)

    async def sweep(name: str, profile: Any, record: Any) -> list[Any]:
        async def tail() -> list[str]:
            return list(await life.read_log_tail(record.log_path or "/dev/null", 16384))

        return await sweep_profile(
            transport, host, spec, name, profile, emit, store_path,
            label=f"A/B {name} ({preset})", log_tail=tail,
        )

    a, b = names
    return await ab.run_ab(
        life, (a, config.profiles[a]), (b, config.profiles[b]), sweep,
        on_progress=on_progress, on_event=lifecycle_sink(host.name, emit),
        repeats=spec.repeats,
    )


def delta_rows(result: Any) -> list[tuple[str, ...]]:
    return _module("console.server.ab").delta_table(result)  # type: ignore[no-any-return]


def _info(host: str, source: str, message: str) -> Any:
    from console.session.events import Problem

    return Problem(host, source, message, level="info")
