"""Start, stop, restart and status of a host's server: the one way the CLI (`plateau server`,
the demo targets of `sweep`) and the console's session drive the server lifecycle.

Each job builds a ServerLifecycle on a connected transport and reports the lifecycle's typed
events (console.server.events) to `on_event`; the front end renders them. The lifecycle takes
the host's lease itself, so a job refuses (HostBusy) while a sweep, A/B or restart runs,
unless `wait=True` queues it behind that work.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from console.config_models import HostConfig, PlateauConfig, ServerProfile
from console.errors import UsageError
from console.host.transport import Transport
from console.server.discovery import FlagDiscovery
from console.server.events import EventSink, ignore_events
from console.server.lifecycle import LifecycleOptions, ServerLifecycle
from console.server.records import LaunchRecord
from console.server.startup_log import StartupLog

GpuMemoryProbe = Callable[[], Awaitable[Sequence[float]]]
"""Used MiB per GPU, so a restart can wait for memory to come back after the stop."""


def lifecycle_for(
    transport: Transport,
    host: HostConfig,
    *,
    discovery: FlagDiscovery | None = None,
    gpu_probe: GpuMemoryProbe | None = None,
    options: LifecycleOptions | None = None,
    startup_log: StartupLog | None = None,
) -> ServerLifecycle:
    return ServerLifecycle(
        transport, host, discovery=discovery, gpu_probe=gpu_probe, options=options,
        startup_log=startup_log,
    )


def pick_profile(
    config: PlateauConfig, wanted: str | None, default: str | None
) -> tuple[str, ServerProfile]:
    """`wanted`, else the host's profile, else the first configured one; unknown names are a
    usage error listing the known ones."""
    name = wanted or default or next(iter(config.profiles), None)
    if name is None:
        raise UsageError("no launch profiles configured ([profiles.NAME] in the config)")
    if name not in config.profiles:
        known = ", ".join(sorted(config.profiles)) or "none"
        raise UsageError(f"unknown profile {name!r} (known: {known})")
    return name, config.profiles[name]


async def start(
    lifecycle: ServerLifecycle,
    config: PlateauConfig,
    profile: str | None = None,
    on_event: EventSink = ignore_events,
    *,
    wait: bool = False,
) -> LaunchRecord:
    """Validate, launch detached, follow startup until ready (a running server is refused).
    `profile` defaults to the host's profile."""
    name, chosen = pick_profile(config, profile, lifecycle.host.profile)
    return await lifecycle.start(name, chosen, on_event, wait=wait)


async def restart(
    lifecycle: ServerLifecycle,
    config: PlateauConfig,
    profile: str | None = None,
    on_event: EventSink = ignore_events,
    *,
    wait: bool = False,
) -> LaunchRecord:
    """Validate first (nothing is stopped for an invalid profile), stop, launch, follow."""
    name, chosen = pick_profile(config, profile, lifecycle.host.profile)
    return await lifecycle.restart(name, chosen, on_event, wait=wait)


async def stop(
    lifecycle: ServerLifecycle, on_event: EventSink = ignore_events, *, wait: bool = False,
    config: PlateauConfig | None = None,
) -> LaunchRecord | None:
    """SIGTERM, drain, SIGKILL if needed; the stopped server's record (None: none ran).
    With `config`, the host profile's port is checked too when there is no launch record."""
    port = None
    if config is not None and lifecycle.host.profile in config.profiles:
        port = config.profiles[lifecycle.host.profile].port
    return await lifecycle.stop(on_event, wait=wait, port=port)
