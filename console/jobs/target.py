"""Where a job works: `--demo`, a configured HOST, or `--url URL`, resolved one way for the
CLI commands and the console's session.

- `demo_target`: the simulated demo host on this machine. Its server starts through the
  server lifecycle (console.jobs.server), exactly like `plateau demo` and a real restart,
  and is stopped on exit.
- `host_target`: a configured host, connected here; `on_host` does the same on a transport
  that is already connected (the console's session): the profile's port through a port
  forward, the server's log tail from its launch record.
- `url_target`: a server URL as given; nothing on a host is touched.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import platformdirs

from console.config_models import HostConfig, PlateauConfig, ServerProfile
from console.demo import DEMO_HOST, demo_config, free_port, temp_demo
from console.engines import ServerEngine, engine_named, engine_of_profile
from console.errors import PlateauError, UsageError
from console.host.factory import transport_for
from console.host.transport import Transport
from console.jobs import server as server_jobs
from console.server.events import EventSink, ignore_events
from console.server.guard import owner_guard
from console.server.lifecycle import ServerLifecycle
from console.store.models import RunMeta

if TYPE_CHECKING:  # the sweep module imports the load engines: not for `plateau demo`
    from console.bench.sweep import LogTail

LOG_TAIL_BYTES = 16384
LOG_TAIL_LINES = 20


@dataclass(frozen=True)
class Target:
    """A server a job can reach from this machine, and what to store about it."""

    base_url: str
    """Reachable from here (a port forward's local end for hosts)."""
    meta: RunMeta
    """Host, profile, flags and the server's own URL as stored with each run."""
    transport: Transport | None = None
    """The host's connection (None for --url: nothing runs on a host)."""
    host: HostConfig | None = None
    profile: ServerProfile | None = None
    log_tail: LogTail | None = None
    engine_name: str | None = None
    """A --url server's engine (given, or detected by `url_target`); a profile says its own."""

    @property
    def engine(self) -> ServerEngine:
        """The inference engine serving this target (console/engines/)."""
        if self.profile is not None:
            return engine_of_profile(self.profile)
        return engine_named(self.engine_name)

    @property
    def host_python(self) -> str:
        return self.host.python if self.host is not None else "python3"

    @property
    def host_port(self) -> int | None:
        return self.profile.port if self.profile is not None else None


# -- the demo host ------------------------------------------------------------------------


def standing_demo_dir() -> Path:
    """A fixed place, so `server start`, `status` and `stop` in separate invocations agree."""
    return Path(platformdirs.user_state_dir("plateau")) / "demo-server"


def standing_demo() -> PlateauConfig:
    """The demo config of `plateau server ... --demo` (fixed run dir and port)."""
    run_dir = standing_demo_dir()
    run_dir.mkdir(parents=True, exist_ok=True)
    port_file = run_dir / "port"
    try:
        port = int(port_file.read_text().strip())
    except (OSError, ValueError):
        port = free_port()
        port_file.write_text(f"{port}\n")
    return demo_config(run_dir, port=port, startup_seconds=2.0)


@contextlib.asynccontextmanager
async def demo_target(
    profile: str | None = None,
    *,
    seed: int | None = None,
    on_event: EventSink = ignore_events,
) -> AsyncIterator[tuple[Target, PlateauConfig]]:
    """Start the demo host's server (`profile`, default the host's) through the lifecycle in
    a temp run dir, yield the target and the demo config (its sweep presets), then stop it."""
    config, _run_dir = temp_demo(seed, startup_seconds=0)
    host = config.host(DEMO_HOST)
    transport = transport_for(host)
    await transport.connect()
    try:
        # Started first: if we are killed, the server and the temp run dir go with us.
        async with owner_guard(transport, host, stop_server=True, remove_run_dir=True):
            lifecycle = ServerLifecycle(transport, host)
            record = await server_jobs.start(lifecycle, config, profile, on_event)
            try:
                name = record.profile
                async with on_host(transport, host, name, config.profiles[name]) as target:
                    yield target, config
            finally:
                await server_jobs.stop(lifecycle, on_event)
    finally:
        await transport.close()


# -- configured hosts -----------------------------------------------------------------------


def host_and_profile(
    config: PlateauConfig, host_name: str | None, profile: str | None
) -> tuple[HostConfig, str, ServerProfile]:
    """The configured host (default: the config's default) and the profile whose port to use
    (default: the host's); unknown names are usage errors."""
    try:
        host = config.host(host_name)
    except KeyError as exc:
        raise UsageError(str(exc.args[0])) from None
    name = profile or host.profile
    if not name:
        raise UsageError(
            f"host {host.name!r} has no profile; pass --profile NAME to say which port to use"
        )
    if name not in config.profiles:
        known = ", ".join(sorted(config.profiles)) or "none"
        raise UsageError(f"unknown profile {name!r} (known: {known})")
    return host, name, config.profiles[name]


@contextlib.asynccontextmanager
async def host_target(
    config: PlateauConfig, host_name: str | None, profile: str | None = None
) -> AsyncIterator[Target]:
    """Connect to a configured host for the duration and reach its server through a port
    forward to the profile's port."""
    host, name, chosen = host_and_profile(config, host_name, profile)
    transport = transport_for(host)
    await transport.connect()
    try:
        async with on_host(transport, host, name, chosen) as target:
            yield target
    finally:
        await transport.close()


@contextlib.asynccontextmanager
async def on_host(
    transport: Transport, host: HostConfig, name: str, profile: ServerProfile
) -> AsyncIterator[Target]:
    """The server of profile `name` on a connected host, through a port forward (closed on
    exit)."""
    version = await _recorded_version(ServerLifecycle(transport, host))
    forward = await transport.forward_port(profile.port)
    try:
        yield Target(
            base_url=f"http://127.0.0.1:{forward.local_port}",
            meta=RunMeta(
                host=host.name,
                profile=name,
                flags=dict(profile.flags),
                # The server's address on its host: a forward's local port means nothing later.
                server_url=f"http://{profile.host}:{profile.port}",
                server_engine=profile.engine,
                server_version=version,
            ),
            transport=transport,
            host=host,
            profile=profile,
            log_tail=server_log_tail(ServerLifecycle(transport, host)),
        )
    finally:
        await forward.close()


async def _recorded_version(lifecycle: ServerLifecycle) -> str:
    """The running server's version as its launch recorded it (the engine's package version,
    read when the profile was validated): what a run keeps when the server has no
    /server_info to say it (transformers serve), so an A/A's boot floor and an upgrade A/B
    are keyed by a version, not by ""."""
    try:
        record = await lifecycle.read_record()
    except PlateauError:  # no record to read is no version, never a failed sweep
        return ""
    return (record.sglang_version or "") if record is not None else ""


def server_log_tail(lifecycle: ServerLifecycle) -> LogTail:
    """The running server's last log lines (from its launch record), for a failed step."""

    async def tail() -> Sequence[str]:
        record = await lifecycle.read_record()
        if record is None or not record.log_path:
            return []
        lines = await lifecycle.read_log_tail(record.log_path, LOG_TAIL_BYTES)
        return lines[-LOG_TAIL_LINES:]

    return tail


# -- a bare URL -----------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def url_target(url: str, engine: str | None = None) -> AsyncIterator[Target]:
    """A server as its URL says; its engine as given, else asked of the server."""
    base = url.rstrip("/")
    if engine is None:
        from console.bench.server_probe import detect_engine  # httpx: not for `plateau demo`

        engine = (await detect_engine(base)).name
    yield Target(base_url=base, meta=RunMeta(server_url=base, server_engine=engine),
                 engine_name=engine)
