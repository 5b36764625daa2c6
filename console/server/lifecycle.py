"""The restart state machine: validate → stop → verify stopped → launch → startup → ready.

Everything goes through the Transport, so the same code drives the demo (LocalTransport), the
tests (a real sshd on loopback) and a real GPU box. Every phase emits typed events
(events.py); a failure raises `LifecycleError` with the reason and the relevant log lines,
after the host was cleaned up (no stray process from a failed or cancelled launch).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import posixpath
import re
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from console.config_models import HostConfig, ServerProfile
from console.engines import engine_of_profile
from console.errors import PlateauError, TransportError, UsageError
from console.host import scripts
from console.host.transport import DetachedProcess, Transport
from console.server.config_merge import config_path, merge_key, with_config
from console.server.discovery import FlagDiscovery, package_version, python_for
from console.server.events import (
    CommandShown,
    EventSink,
    LifecycleDone,
    LifecycleFailed,
    LogLine,
    Phase,
    PhaseFinished,
    PhaseProgress,
    PhaseStarted,
    StartupStep,
    ignore_events,
)
from console.server.hostscript import run_host_script
from console.server.lease import host_lease
from console.server.records import LaunchRecord, display_command, redact_argv
from console.server.startup_log import OwnFollower, StartupFeed, StartupLog
from console.server.translate import translate_profile
from console.server.validate import ValidationReport, check_safety, validate_profile
from console.sglang import endpoints
from console.sglang.launch_log import diagnose, step_fraction, step_of
from console.text import sanitize

if TYPE_CHECKING:
    import httpx


def _httpx() -> ModuleType:
    """httpx, imported when the first HTTP request is made (its import, with click, pygments
    and email, was a tenth of `plateau demo`'s start-up; the first frame needs no HTTP)."""
    import httpx

    return httpx

GpuMemoryProbe = Callable[[], Awaitable[Sequence[float]]]
"""Used memory per GPU in MiB (from telemetry); lets `verify stopped` wait for baseline."""

API_KEY_CARRIER = "PLATEAU_SERVER_API_KEY"
# After HTTP says ready, how long to wait for the follower to deliver the ready line (it is a
# host process of its own, which a loaded host starts slowly); normally it is already there.
_CATCH_UP_S = 15.0
_FOLLOWER_STOP_S = 10.0
LAUNCH_ID_ENV = "PLATEAU_LAUNCH_ID"
# Constant program: reads the key from its environment and appends it to the server argv, so
# the key is never part of a command string we build, a record or a log.
_API_KEY_WRAPPER = (
    'k="$' + API_KEY_CARRIER + '"; unset ' + API_KEY_CARRIER + '; exec "$@" --api-key "$k"'
)
_KEYED_DETACH = f"IFS= read -r {API_KEY_CARRIER}; export {API_KEY_CARRIER}; {scripts.DETACH}"
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def hidden_text(owners: Sequence[dict[str, Any]]) -> str:
    """Who holds a port through a socket whose process this account cannot see."""
    names = []
    for owner in owners[:4]:
        uid = owner.get("uid")
        user = sanitize(str(owner.get("user") or ""))[:64]
        names.append(f"{user} (uid {uid})" if user else f"uid {uid}")
    return (f"a process of another user, {', '.join(names)}, which this account cannot "
            "inspect or signal (ask them, or run Plateau as that user)")


_IDEMPOTENT = frozenset({"probe", "read", "write", "remove", "forget_keys"})


class LifecycleError(PlateauError):
    def __init__(self, phase: Phase, reason: str, log_lines: Sequence[str] = ()) -> None:
        lines = "".join(f"\n    {line}" for line in log_lines)
        super().__init__(f"{phase.value} failed: {reason}{lines}")
        self.phase = phase
        self.reason = reason
        self.log_lines = tuple(log_lines)


@dataclass(frozen=True)
class LifecycleOptions:
    drain_timeout_s: float = 30.0
    kill_timeout_s: float = 10.0
    port_free_timeout_s: float = 15.0
    gpu_free_timeout_s: float = 60.0
    gpu_tolerance_mib: float = 1024.0
    startup_timeout_s: float = 1800.0
    poll_interval_s: float = 0.1
    ready_paths: tuple[str, ...] = ("/ready", "/health")
    http_timeout_s: float = 3.0


class ServerStatus(BaseModel):
    model_config = ConfigDict(frozen=True)

    host: str
    running: bool
    record: LaunchRecord | None = None
    # "unchecked": the process is alive but HTTP was not asked this time (see status()).
    health: Literal["ready", "starting", "unhealthy", "down", "unchecked"] = "down"
    version: str | None = None
    uptime_s: float | None = None
    detail: str = ""


@dataclass(frozen=True)
class _Target:
    """A server process to stop: from the launch record or adopted from the port."""

    pid: int
    pgid: int
    port: int
    record: LaunchRecord | None


class ServerLifecycle:
    """Start, stop, restart and adopt the SGLang server of one host."""

    def __init__(
        self,
        transport: Transport,
        host: HostConfig,
        *,
        discovery: FlagDiscovery | None = None,
        gpu_probe: GpuMemoryProbe | None = None,
        options: LifecycleOptions | None = None,
        local_env: Mapping[str, str] | None = None,
        startup_log: StartupLog | None = None,
    ) -> None:
        self.transport = transport
        self.host = host
        self.discovery = discovery if discovery is not None else FlagDiscovery(transport, host)
        self.gpu_probe = gpu_probe
        self.options = options or LifecycleOptions()
        self._local_env = local_env
        # Where a launch's startup lines come from: the console's session hands its own
        # follower's (one follower per host), the CLI starts one of its own.
        self.startup_log = startup_log or OwnFollower(transport, host.python)

    # ------------------------------------------------------------------ small helpers

    @property
    def record_path(self) -> str:
        return f"{self.host.run_dir.rstrip('/')}/server.json"

    async def _script(self, command: str, args: dict[str, Any], **kw: Any) -> dict[str, Any]:
        """A host helper; one that only looks (or rewrites the same bytes) is asked again
        when the connection dropped under it (the transport reconnects), so a drop the
        lease outlives does not fail the operation holding it."""
        tries = 3 if command in _IDEMPOTENT else 1
        for attempt in range(1, tries + 1):
            try:
                return await run_host_script(self.transport, self.host.python, command, args,
                                             **kw)
            except TransportError:
                if attempt == tries:
                    raise
        raise AssertionError("unreachable")

    async def read_record(self) -> LaunchRecord | None:
        return (await self._read_record(probe=False))[0]

    async def _read_record(
        self, *, probe: bool = True
    ) -> tuple[LaunchRecord | None, dict[str, Any] | None]:
        """The launch record and, with `probe`, its process probed by the same host script
        run (pid, start time, boot, launch id, group): a status poll is one round trip, not
        three (64 hosts polled every 2 s made 2 forks per poll the hosts' largest cost)."""
        found = await self._script("read", {"path": self.record_path, "probe_record": probe})
        if not found["exists"]:
            return None, None
        try:
            record = LaunchRecord.model_validate_json(found["text"])
        except ValueError:
            return None, None
        probed = found.get("probe")
        return record, (probed if isinstance(probed, dict) else None)

    async def _write_record(self, record: LaunchRecord) -> None:
        await self._script(
            "write", {"path": self.record_path}, stdin=record.model_dump_json(indent=2)
        )

    async def _probe(
        self,
        *,
        pid: int = 0,
        pgid: int = 0,
        port: int = 0,
        bind_host: str = "127.0.0.1",
        listeners: bool = False,
        launch_id: str | None = None,
    ) -> dict[str, Any]:
        return await self._script(
            "probe",
            {"pid": pid, "pgid": pgid, "port": port, "host": bind_host, "listeners": listeners,
             "identify": launch_id is not None, "launch_id": launch_id or ""},
        )

    async def proven(self, record: LaunchRecord) -> bool:
        """True when the record's pid is, provably, the process the record describes: same
        start time and boot (so not a later process reusing the pid) and, for a server
        Plateau launched, its launch id in the process's environment. Nothing else is ever
        signalled."""
        if record.state in ("stopped", "failed") or record.start_ticks is None:
            return False
        probe = await self._probe(pid=record.pid, launch_id=record.launch_id or "")
        return _proven_by(record, probe)

    async def read_log_tail(self, path: str, max_bytes: int = 65536) -> list[str]:
        found = await self._script("read", {"path": path, "tail": max_bytes})
        return [sanitize(line) for line in found["text"].splitlines()]

    @asynccontextmanager
    async def http(self, port: int, api_key: str | None = None) -> AsyncIterator[httpx.AsyncClient]:
        """An HTTP client for the server's port on the host (through the transport)."""
        forward = await self.transport.forward_port(port)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else None
        try:
            async with _httpx().AsyncClient(
                base_url=f"http://127.0.0.1:{forward.local_port}",
                timeout=self.options.http_timeout_s,
                headers=headers,
                trust_env=False,
                # Plain HTTP to a loopback forward: no TLS, so no CA bundle to load (a default
                # client loads certifi's into an SSL context: ~0.7 MB and ~10 ms each, per host).
                verify=False,
            ) as client:
                yield client
        finally:
            await forward.close()

    def _api_key(self, profile: ServerProfile) -> str | None:
        if profile.api_key_env is None:
            return None
        env = self._local_env if self._local_env is not None else os.environ
        return env.get(profile.api_key_env)

    # ------------------------------------------------------------------ validation

    async def validate(self, profile: ServerProfile) -> ValidationReport:
        """Safety checks plus the host's discovered flags (cached per host and version)."""
        safety = check_safety(profile)
        if not safety.ok:
            return safety  # never run anything on the host with a hostile profile
        schema = await self.discovery.schema_for(profile)
        where = f"{' '.join(profile.launch[-2:])} --help on {self.host.name}"
        if schema.version:
            where += f" ({engine_of_profile(profile).title} {schema.version})"
        return validate_profile(profile, schema, checked_against=where)

    # ------------------------------------------------------------------ status / adopt

    async def status(
        self, *, check_health: bool = True, known_version: str | None = None
    ) -> ServerStatus:
        """Is the recorded server alive, and (with `check_health`) does HTTP answer?

        Every HTTP request becomes an access line in the server's own log, so a poller can
        check liveness often and health seldom; `known_version` skips `/server_info`."""
        record, probe = await self._read_record()
        record_alive = record is not None and await self._record_alive(record, probe)
        if not record_alive:
            return ServerStatus(host=self.host.name, running=False, record=record)
        assert record is not None
        if not check_health:
            return ServerStatus(
                host=self.host.name, running=True, record=record, health="unchecked",
                version=known_version or record.sglang_version, uptime_s=record.uptime_s(),
            )
        health, version = await self._health(record.port, need_version=known_version is None)
        version = version or known_version
        return ServerStatus(
            host=self.host.name,
            running=True,
            record=record,
            health=health,
            version=version or record.sglang_version,
            uptime_s=record.uptime_s(),
        )

    async def _health(
        self, port: int, *, need_version: bool = True
    ) -> tuple[Literal["ready", "starting", "unhealthy", "down"], str | None]:
        try:
            async with self.http(port) as client:
                code = await self._ready_code(client)
                if code != 200:
                    return ("starting" if code == 503 else "unhealthy"), None
                if not need_version:
                    return "ready", None
                info = await client.get(endpoints.SERVER_INFO)
                version = info.json().get("version") if info.status_code == 200 else None
                return "ready", (sanitize(str(version)) if version else None)
        except (_httpx().HTTPError, OSError, PlateauError, ValueError):
            return "down", None

    async def _ready_code(self, client: httpx.AsyncClient) -> int:
        code = 0
        for path in self.options.ready_paths:
            response = await client.get(path)
            code = response.status_code
            if code != 404:
                return code
        return code

    async def _record_alive(self, record: LaunchRecord,
                            probe: dict[str, Any] | None = None) -> bool:
        """The recorded server runs: its pid is proven, or (the leader gone) its process
        group still has members; a group id cannot be reused while members remain.
        `probe`: the record's process as `_read_record` probed it (else probed here)."""
        if record.state in ("stopped", "failed") or record.start_ticks is None:
            return False
        if probe is not None:
            return _proven_by(record, probe) or _group_outlives_leader(record, probe)
        if await self.proven(record):
            return True
        probe = await self._probe(pid=record.pid, pgid=record.pgid)
        return _group_outlives_leader(record, probe)

    async def find_server(
        self, port: int, bind_host: str, launch: Sequence[str] = ()
    ) -> _Target | None:
        """The server to stop: the launch record's, when the record proves it (see
        `proven`). Anything else listening on `port` is never touched: it is reported with
        its command line, and the operator may adopt it explicitly (`adopt(pid=...)`)."""
        record, probe = await self._read_record()
        if record is not None and await self._record_alive(record, probe):
            return _Target(record.pid, record.pgid, record.port, record)
        probe = await self._probe(port=port, bind_host=bind_host, listeners=True)
        if probe.get("listeners"):
            other = probe["listeners"][0]
            cmd = sanitize(" ".join(other.get("argv", []))[:160])
            raise LifecycleError(
                Phase.STOP,
                f"port {port} is used by pid {other['pid']} ({cmd}), which Plateau did not "
                "start; not touching it. If it is the server, check that command line and "
                f"adopt it: plateau server adopt {self.host.name} --pid {other['pid']}",
            )
        if probe.get("hidden_listeners"):
            raise LifecycleError(Phase.STOP, f"port {port} is used by "
                                 f"{hidden_text(probe['hidden_listeners'])}; not touching it")
        return None

    async def listeners(self, port: int, bind_host: str = "127.0.0.1") -> list[dict[str, Any]]:
        """Processes listening on `port` (pid, argv, start time), for the operator to see."""
        return (await self.port_users(port, bind_host))[0]

    async def port_users(
        self, port: int, bind_host: str = "127.0.0.1"
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """What listens on `port`: the processes this account can see, and the owners
        (uid, user) of listening sockets whose process it cannot (another user's)."""
        probe = await self._probe(port=port, bind_host=bind_host, listeners=True)
        return list(probe.get("listeners", [])), list(probe.get("hidden_listeners", []))

    async def adopt(
        self, port: int, pid: int, profile_name: str = "adopted", *,
        bind_host: str = "127.0.0.1", wait: bool = False,
    ) -> LaunchRecord:
        """Take over a server started by hand, after the operator saw its command line and
        named its pid: write a launch record (with its start time) so stop/restart may
        signal it."""
        async with self._lease(f"adopt pid {pid}", wait):
            found = next((p for p in await self.listeners(port, bind_host)
                          if int(p.get("pid", 0)) == pid), None)
            if found is None:
                raise LifecycleError(Phase.STOP, f"pid {pid} does not listen on port {port}")
            started = found.get("started_at")
            identity = await self._probe(pid=pid, launch_id="")
            health, version = await self._health(port)
            pgid = int(found.get("pgid") or pid)
            record = LaunchRecord(
                pid=pid,
                # Signal its group only when it leads one (started with setsid); else itself.
                pgid=pgid if pgid == pid else pid,
                port=port,
                host=bind_host,
                profile=profile_name,
                argv=redact_argv([sanitize(a) for a in found.get("argv", [])]),
                log_path=found.get("log_path"),
                started_at=(datetime.fromtimestamp(started, UTC) if started
                            else datetime.now(UTC)),
                sglang_version=version,
                origin="adopted",
                state="ready" if health == "ready" else "starting",
                start_ticks=identity.get("start_ticks"),
                boot_id=identity.get("boot_id"),
            )
            await self._write_record(record)
            return record

    # ------------------------------------------------------------------ public actions

    def _lease(self, purpose: str, wait: bool) -> AbstractAsyncContextManager[Any]:
        """The host-wide lease; it lives on the host (run_dir/lease), whoever asks."""
        return host_lease(self.host.name).hold(
            purpose, wait=wait, transport=self.transport, host=self.host
        )

    async def start(
        self, name: str, profile: ServerProfile, on_event: EventSink = ignore_events,
        *, wait: bool = False,
    ) -> LaunchRecord:
        async with self._lease(f"start {name}", wait):
            run = _Run(on_event)
            profile = await self._validate_phase(run, profile)
            key = self._require_key(run, profile)
            running = await self.find_server(profile.port, profile.host, profile.launch)
            if running is not None:
                run.fail(Phase.VALIDATE, f"a server is already running (pid {running.pid}, port "
                         f"{running.port}); use restart")
            record = await self._launch_and_wait(run, name, profile, key)
            run.done("start", f"{name} ready on port {profile.port}", record.sglang_version)
            return record

    async def stop(self, on_event: EventSink = ignore_events, *, port: int | None = None,
                   wait: bool = False) -> LaunchRecord | None:
        async with self._lease("stop", wait):
            run = _Run(on_event)
            record = await self._stop_phases(run, port, "127.0.0.1", ())
            run.done("stop", "stopped" if record else "nothing was running")
            return record

    async def restart(
        self, name: str, profile: ServerProfile, on_event: EventSink = ignore_events,
        *, wait: bool = False,
    ) -> LaunchRecord:
        """Validate first (nothing is stopped for an invalid profile), then stop, verify,
        launch and follow startup until ready."""
        async with self._lease(f"restart → {name}", wait):
            run = _Run(on_event)
            profile = await self._validate_phase(run, profile)
            key = self._require_key(run, profile)
            await self._stop_phases(run, profile.port, profile.host, profile.launch)
            record = await self._launch_and_wait(run, name, profile, key)
            run.done("restart", f"{name} ready on port {profile.port}", record.sglang_version)
            return record

    # ------------------------------------------------------------------ phases

    async def _validate_phase(self, run: _Run, profile: ServerProfile) -> ServerProfile:
        """Validate, and return the profile to launch: flags the host's SGLang renamed are
        written in its names (console.server.translate), each with a note."""
        run.start(Phase.VALIDATE, "checking the profile against the host's --help")
        try:
            report = await self.validate(profile)
            if check_safety(profile).ok:
                translated, _ = translate_profile(
                    profile, await self.discovery.schema_for(profile))
            else:
                translated = profile
        except PlateauError as exc:
            run.fail(Phase.VALIDATE, str(exc))
        for warning in report.warnings:
            run.progress(Phase.VALIDATE, str(warning))
        if not report.ok:
            run.fail(Phase.VALIDATE, "invalid profile (nothing was stopped): "
                     + "; ".join(str(i) for i in report.errors))
        run.finish(Phase.VALIDATE, report.checked_against or "safety checks")
        return translated

    def _require_key(self, run: _Run, profile: ServerProfile) -> str | None:
        key = self._api_key(profile)
        if profile.api_key_env is not None and not key:
            run.fail(Phase.VALIDATE, f"api_key_env {profile.api_key_env} is not set locally "
                     "(nothing was stopped)")
        return key

    async def _stop_phases(
        self, run: _Run, port: int | None, bind_host: str, launch: Sequence[str]
    ) -> LaunchRecord | None:
        run.start(Phase.STOP)
        with contextlib.suppress(PlateauError, OSError):  # a key file a killed client left
            await self._script("forget_keys", {"run_dir": self.host.run_dir})
        record = await self.read_record()
        probe_port = port or (record.port if record else 0)
        try:
            target = await self.find_server(probe_port, bind_host, launch) if probe_port else None
        except LifecycleError as exc:
            run.fail(Phase.STOP, exc.reason)
        if target is None:
            run.finish(Phase.STOP, "nothing running")
            run.start(Phase.VERIFY_STOPPED)
            if not probe_port:  # never "port free" for a port nobody looked at
                run.finish(Phase.VERIFY_STOPPED, "no launch record and no port to check")
                return None
            await self._wait_port_free(run, probe_port, bind_host)
            run.finish(Phase.VERIFY_STOPPED, f"port {probe_port} free")
            return None
        await self._terminate(run, target)
        run.finish(Phase.STOP, f"pid {target.pid} stopped")
        run.start(Phase.VERIFY_STOPPED)
        await self._wait_port_free(run, target.port, bind_host)
        if port and port != target.port:
            await self._wait_port_free(run, port, bind_host)
        baseline = target.record.gpu_baseline_mib if target.record else None
        await self._wait_gpu_baseline(run, baseline)
        run.finish(Phase.VERIFY_STOPPED, "no process, port free")
        stopped = (
            target.record.model_copy(update={"state": "stopped"}) if target.record else None
        )
        if stopped is not None:
            await self._write_record(stopped)
        return stopped

    async def _signal(self, target_pgid: int, pid: int, signal_name: str,
                      own_pgids: Sequence[int]) -> None:
        if target_pgid in own_pgids:
            # Started by hand from our own process group: never signal our own group.
            await self.transport.run(["kill", f"-{signal_name}", str(pid)], timeout=10.0)
        else:
            await self.transport.signal_group(target_pgid, signal_name)

    async def _terminate(self, run: _Run, target: _Target) -> None:
        opts = self.options
        probe = await self._probe(pid=target.pid, pgid=target.pgid)
        own = probe.get("own_pgids", [])
        run.progress(Phase.STOP, f"SIGTERM to process group {target.pgid}")
        await self._signal(target.pgid, target.pid, "TERM", own)
        if await self._wait_gone(run, target, opts.drain_timeout_s, "draining"):
            return
        run.progress(Phase.STOP, f"still running after {opts.drain_timeout_s:g} s: SIGKILL")
        await self._signal(target.pgid, target.pid, "KILL", own)
        if not await self._wait_gone(run, target, opts.kill_timeout_s, "killing"):
            probe = await self._probe(pid=target.pid, pgid=target.pgid)
            run.fail(Phase.STOP, f"processes {probe['group'] or [target.pid]} survived SIGKILL",
                     clean=False)

    async def _wait_gone(self, run: _Run, target: _Target, timeout: float, what: str) -> bool:
        deadline = time.monotonic() + timeout
        next_note = time.monotonic() + 1.0
        while True:
            probe = await self._probe(pid=target.pid, pgid=target.pgid)
            if not probe["pid_alive"] and not probe["group"]:
                return True
            now = time.monotonic()
            if now >= deadline:
                return False
            if now >= next_note:
                left = len(probe["group"]) or 1
                run.progress(Phase.STOP, f"{what}: {left} process(es) left, "
                             f"{deadline - now:.0f} s before escalating")
                next_note = now + 1.0
            await asyncio.sleep(self.options.poll_interval_s)

    async def _wait_port_free(self, run: _Run, port: int, bind_host: str) -> None:
        deadline = time.monotonic() + self.options.port_free_timeout_s
        while True:
            probe = await self._probe(port=port, bind_host=bind_host)
            if probe["port_free"]:
                return
            if time.monotonic() >= deadline:
                probe = await self._probe(port=port, bind_host=bind_host, listeners=True)
                holders = ", ".join(
                    f"pid {p['pid']} ({sanitize(' '.join(p.get('argv', []))[:80])})"
                    for p in probe.get("listeners", [])
                ) or (hidden_text(probe["hidden_listeners"]) if probe.get("hidden_listeners")
                      else "a socket whose process this account cannot see")
                run.fail(Phase.VERIFY_STOPPED, f"port {port} is still in use by {holders}")
            await asyncio.sleep(self.options.poll_interval_s)

    async def _wait_gpu_baseline(self, run: _Run, baseline: Sequence[float] | None) -> None:
        if self.gpu_probe is None or not baseline:
            return
        deadline = time.monotonic() + self.options.gpu_free_timeout_s
        tolerance = self.options.gpu_tolerance_mib
        while True:
            used = list(await self.gpu_probe())
            over = [
                i for i, (u, b) in enumerate(zip(used, baseline, strict=False))
                if u > b + tolerance
            ]
            if not over:
                return
            if time.monotonic() >= deadline:
                run.fail(Phase.VERIFY_STOPPED, f"GPU memory not back to baseline on GPU(s) "
                         f"{over} after {self.options.gpu_free_timeout_s:g} s")
            run.progress(Phase.VERIFY_STOPPED, f"waiting for GPU memory on GPU(s) {over}")
            await asyncio.sleep(max(self.options.poll_interval_s, 0.5))

    def launch_argv(
        self, profile: ServerProfile, with_key: bool, launch_id: str | None = None,
        server_argv: list[str] | None = None,
    ) -> list[str]:
        """The argv given to `start_detached`: env items (the profile's and the launch id
        that later proves the process is this launch), optional key wrapper, the server."""
        # umask 077: whatever the server writes (its own logs, crash dumps) is its user's only.
        argv: list[str] = ["sh", "-c", 'umask 077 && exec "$@"', "sh"]
        env = dict(profile.env)
        if launch_id:
            env[LAUNCH_ID_ENV] = launch_id
        if env:
            argv += ["env", *(f"{k}={v}" for k, v in env.items())]
        if with_key:
            argv += ["sh", "-c", _API_KEY_WRAPPER, "sh"]
        return argv + (profile.argv() if server_argv is None else server_argv)

    async def _launch_and_wait(
        self, run: _Run, name: str, profile: ServerProfile, key: str | None
    ) -> LaunchRecord:
        run.start(Phase.LAUNCH)
        await self._wait_port_free(run, profile.port, profile.host)
        baseline = list(await self.gpu_probe()) if self.gpu_probe else None
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
        safe_name = _SAFE_NAME.sub("_", name)[:60] or "profile"
        prepared = await self._script(
            "prepare", {"run_dir": self.host.run_dir, "stamp": stamp, "profile": safe_name,
                        "log_dir": profile.log_dir or "", "engine": profile.engine},
        )
        log_path = prepared["log_path"]
        secrets = await self._key_file(run, profile, key, prepared["run_dir"], stamp)
        server_argv = profile.argv()
        if secrets is not None:  # the one --config SGLang reads: the profile's own, merged
            server_argv = with_config(server_argv, secrets)
            shown_argv = server_argv
        else:
            shown_argv = server_argv + (["--api-key", "<redacted>"] if key else [])
        run.emit(CommandShown(display_command(shown_argv, profile.env), log_path))
        launch_id = uuid.uuid4().hex
        argv = self.launch_argv(profile, key is not None and secrets is None, launch_id,
                                server_argv)
        process: DetachedProcess | None = None
        feed = self.startup_log.follow(log_path)  # before the server writes its first line
        following = False
        try:
            if key is None or secrets is not None:
                process = await self.transport.start_detached(
                    argv, log_path=log_path, cwd=prepared["run_dir"]
                )
            else:
                process = await self._start_detached_with_key(
                    argv, log_path, prepared["run_dir"], key
                )
            record = LaunchRecord(
                pid=process.pid,
                pgid=process.pgid,
                port=profile.port,
                host=profile.host,
                profile=name,
                argv=redact_argv(shown_argv),
                env_names=sorted(profile.env) + (
                    [profile.api_key_env] if key and profile.api_key_env else []),
                log_path=log_path,
                gpu_baseline_mib=baseline,
                launch_id=launch_id,
                **await self._identity(process.pid),
            )
            await self._write_record(record)
            run.finish(Phase.LAUNCH, f"pid {process.pid}, log {log_path}")
            following = True
            version = await self._follow_startup(run, process, profile, feed, log_path, key)
            record = record.model_copy(update={"state": "ready", "sglang_version": version})
            await self._write_record(record)
            return record
        except BaseException as exc:
            # Failed or cancelled: leave the host clean, whatever phase we were in.
            if process is not None:
                await asyncio.shield(self._cleanup(process, profile))
            if isinstance(exc, LifecycleError | asyncio.CancelledError):
                raise
            if isinstance(exc, PlateauError | OSError | _httpx().HTTPError):
                run.fail(Phase.LAUNCH, str(exc))
            raise
        finally:
            if not following:  # never iterated: closing it waits on nothing
                await feed.close()
            if secrets is not None:  # read once, at startup: gone before anyone asks
                with contextlib.suppress(PlateauError, OSError):
                    await asyncio.shield(self._script("remove", {"path": secrets}))

    async def _key_file(
        self, run: _Run, profile: ServerProfile, key: str | None, run_dir: str, stamp: str
    ) -> str | None:
        """Where SGLang allows it (`--config FILE.yaml`, merged into its argv in-process),
        the API key goes to a 0600 file in the 0700 run dir, never on the server's command
        line (which every user on the host can read in `ps`). Without --config it can only
        go on argv: said plainly."""
        if key is None:
            return None
        schema = await self.discovery.schema_for(profile)
        if schema.get("config") is None:
            run.progress(Phase.LAUNCH, "this SGLang has no --config: the API key is on the "
                         "server's command line, readable by every user on the host (ps)")
            return None
        path = f"{run_dir.rstrip('/')}/launch-{stamp}-secret.yaml"
        text = ""
        own = config_path(profile.argv())
        if own is not None:  # SGLang reads one --config: the key joins the profile's own
            # Relative to the server's cwd (the run dir), as SGLang opens it.
            source = own[1] if own[1].startswith("~") else posixpath.join(run_dir, own[1])
            found = await self._script("read", {"path": source, "follow": True})
            if not found.get("exists"):
                run.fail(Phase.LAUNCH, f"the profile's --config {own[1]} does not exist on "
                         f"{self.host.name} (nothing was stopped)")
            try:
                text = merge_key(str(found.get("text", "")), key, own[1])
            except UsageError as exc:
                run.fail(Phase.LAUNCH, f"{exc} (nothing was stopped)")
            run.progress(Phase.LAUNCH, f"the API key is merged into a private copy of {own[1]}")
        else:
            text = f"api-key: {json.dumps(key)}\n"
        await self._script("write", {"path": path}, stdin=text)
        return path

    async def _identity(self, pid: int) -> dict[str, Any]:
        probe = await self._probe(pid=pid, launch_id="")
        return {"start_ticks": probe.get("start_ticks"), "boot_id": probe.get("boot_id")}

    async def _start_detached_with_key(
        self, argv: list[str], log_path: str, cwd: str, key: str
    ) -> DetachedProcess:
        """Like `start_detached`, but the key travels on stdin into the detached process's
        environment: it is in no command string, record or log we produce."""
        command = scripts.sh(_KEYED_DETACH, log_path, *scripts.with_cwd(argv, cwd))
        result = await self.transport.run(command, input=key + "\n", timeout=30.0)
        lines = result.stdout.strip().splitlines()
        if not result.ok or not lines or not lines[-1].isdigit():
            raise LifecycleError(Phase.LAUNCH, f"could not start the server: "
                                 f"{sanitize(result.stderr.strip()[-300:])}")
        pid = int(lines[-1])
        return DetachedProcess(pid=pid, pgid=pid, log_path=log_path)

    async def _cleanup(self, process: DetachedProcess, profile: ServerProfile) -> None:
        target = _Target(process.pid, process.pgid, profile.port, None)
        try:
            probe = await self._probe(pid=process.pid, pgid=process.pgid)
            own = probe.get("own_pgids", [])
            if probe["pid_alive"] or probe["group"]:
                await self._signal(process.pgid, process.pid, "KILL", own)
                await self._wait_gone(_Run(ignore_events), target, self.options.kill_timeout_s,
                                      "killing")
            record = await self.read_record()
            if record is not None and record.pid == process.pid:
                await self._write_record(record.model_copy(update={"state": "failed"}))
        except (PlateauError, OSError):
            pass

    async def _follow_startup(
        self,
        run: _Run,
        process: DetachedProcess,
        profile: ServerProfile,
        feed: StartupFeed,
        log_path: str,
        key: str | None,
    ) -> str | None:
        """Until the server answers (or its log says it is ready): the startup steps from
        `feed`'s lines, the failure's diagnosis from the log's tail. Closes `feed`."""
        run.start(Phase.STARTUP)
        opts = self.options
        lines: deque[str] = deque(maxlen=2000)

        def scrub(line: str) -> str:
            # The server may print its own args (SGLang's `server_args=` line): never pass the
            # key on in an event or an error.
            return line.replace(key, "<redacted>") if key else line

        state: dict[str, Any] = {"step": StartupStep.LAUNCHED, "ready_line": False}
        engine = engine_of_profile(profile)

        said = _SaidOnce(run)

        def take(raw: str) -> None:
            line = scrub(sanitize(raw))
            lines.append(line)
            run.emit(LogLine(line))
            step = step_of(line)
            if step is not None and step != state["step"]:
                state["step"] = step
                run.progress(Phase.STARTUP, step.value, step=step,
                             fraction=step_fraction(step))
            if any(ready in line for ready in engine.ready_lines):
                state["ready_line"] = True

        async def follow() -> None:
            # A lost connection is said once, not per poll (the follower resumes at the
            # exact byte offset: no line lost or repeated).
            try:
                async for batch in feed:
                    for notice in batch.notices:
                        if notice.kind == "lost":
                            said.once("follow", f"log follower lost the connection "
                                      f"({sanitize(notice.detail)[:200]}); it resumes at byte "
                                      f"{batch.position.offset if batch.position else 0}")
                        elif notice.kind == "resumed":
                            said.clear("follow", "log follower resumed")
                    for event in batch.events:
                        for raw in event.lines:
                            take(raw)
            finally:
                await feed.close()

        follower = asyncio.create_task(follow())
        deadline = time.monotonic() + opts.startup_timeout_s
        try:
            async with self.http(profile.port, key) as client:
                while True:
                    if not await self._alive_through_drops(process.pid, said):
                        await asyncio.sleep(0.3)  # let the last lines reach the log
                        tail = [scrub(x) for x in await self.read_log_tail(log_path)]
                        diagnosis = diagnose(tail)
                        run.fail(Phase.STARTUP, f"{diagnosis.reason} ({diagnosis.kind})",
                                 diagnosis.lines)
                    code = await self._try_ready(client)
                    if code == 200 or (state["ready_line"] and code is None):
                        break
                    if time.monotonic() >= deadline:
                        tail = [scrub(x) for x in await self.read_log_tail(log_path)]
                        run.fail(Phase.STARTUP, f"not ready after {opts.startup_timeout_s:g} s "
                                 f"(last step: {state['step'].value})", tail[-12:])
                    await asyncio.sleep(opts.poll_interval_s)
                # HTTP can answer before our log follower (a poll behind) has read the
                # startup lines; give it a moment so the phases shown are complete.
                catch_up = time.monotonic() + _CATCH_UP_S
                while not state["ready_line"] and not follower.done():
                    if time.monotonic() >= catch_up:
                        break
                    await asyncio.sleep(0.05)
                how = "HTTP /ready" if code == 200 else "log line (HTTP unreachable)"
                run.finish(Phase.STARTUP, f"ready via {how}")
                run.start(Phase.READY)
                version = await self._server_version(client, profile)
                if key:
                    await self._refuses_without_key(run, profile)
                run.finish(Phase.READY, f"{engine.title} {version or 'unknown version'}")
                return version
        finally:
            follower.cancel()
            # Bounded: a follower that ignored its cancellation (it once did, see console.aio)
            # must not hold a finished restart hostage; its host process ends with its stream.
            await asyncio.wait({follower}, timeout=_FOLLOWER_STOP_S)
            if follower.done() and not follower.cancelled():
                follower.exception()  # retrieved: a follower's failure is not the restart's
            if follower.cancelled():  # perhaps before it began: its feed closed all the same
                await asyncio.wait({asyncio.ensure_future(feed.close())},
                                   timeout=_FOLLOWER_STOP_S)

    async def _server_version(self, client: httpx.AsyncClient,
                              profile: ServerProfile) -> str | None:
        """What the server says its version is (SGLang: /server_info), else its engine's
        distribution in the server's environment (transformers serve has no such path)."""
        engine = engine_of_profile(profile)
        for path in engine.server_info_paths:
            try:
                info = await client.get(path)
                if info.status_code == 200:
                    return sanitize(str(info.json().get("version") or ""))[:64] or None
            except (_httpx().HTTPError, ValueError, AttributeError):
                continue
        if engine.server_info_paths:  # it has one, and it did not say
            return None
        try:
            return await package_version(self.transport, python_for(profile, self.host),
                                         engine.dist_name)
        except PlateauError:
            return None

    async def _refuses_without_key(self, run: _Run, profile: ServerProfile) -> None:
        """An API key was asked for: prove the server refuses a request without it. A server
        that answers anyway (its key lost on the way, e.g. a second --config it ignored) is
        stopped rather than reported ready."""
        try:
            async with self.http(profile.port) as bare:
                code = (await bare.get(endpoints.SERVER_INFO)).status_code
        except (_httpx().HTTPError, OSError):
            return  # unreachable from here: nothing proven either way, said by the probe
        if code not in (401, 403):
            run.fail(Phase.READY, f"the server answered a request without the API key "
                     f"(HTTP {code}): it runs unauthenticated, so it was stopped; check the "
                     "profile's --config and api_key_env")

    async def _alive_through_drops(self, pid: int, said: _SaidOnce) -> bool:
        """Is the launched process alive? A dropped connection is not a dead server: say so
        once and keep waiting (the transport reconnects) until the startup deadline."""
        try:
            # The host helper, not `is_alive`: a command cut by the drop must not read as
            # "no such process" (the helper raises unless it answered).
            alive = bool((await self._probe(pid=pid))["pid_alive"])
        except PlateauError as exc:
            said.once("probe", f"connection to {self.host.name} lost ({exc}); waiting for it")
            return True
        said.clear("probe", f"connection to {self.host.name} is back")
        return alive

    async def _try_ready(self, client: httpx.AsyncClient) -> int | None:
        try:
            return await self._ready_code(client)
        except (_httpx().HTTPError, OSError):
            return None


class _SaidOnce:
    """Progress notes said once per outage, not once per poll."""

    def __init__(self, run: _Run) -> None:
        self.run = run
        self.open: set[str] = set()

    def once(self, key: str, message: str) -> None:
        if key not in self.open:
            self.open.add(key)
            self.run.progress(Phase.STARTUP, message)

    def clear(self, key: str, message: str) -> None:
        if key in self.open:
            self.open.discard(key)
            self.run.progress(Phase.STARTUP, message)


class _Run:
    """Event emission and timing for one action."""

    def __init__(self, sink: EventSink) -> None:
        self.sink = sink
        self.started: dict[Phase, float] = {}
        self.timings: dict[str, float] = {}
        self.current: Phase = Phase.VALIDATE
        self.t0 = time.monotonic()

    def emit(self, event: Any) -> None:
        with contextlib.suppress(Exception):  # a broken listener must not break a restart
            self.sink(event)

    def start(self, phase: Phase, message: str = "") -> None:
        self.current = phase
        self.started[phase] = time.monotonic()
        self.emit(PhaseStarted(phase, message))

    def progress(self, phase: Phase, message: str, **kw: Any) -> None:
        self.emit(PhaseProgress(phase, message, **kw))

    def finish(self, phase: Phase, message: str = "") -> None:
        elapsed = time.monotonic() - self.started.get(phase, self.t0)
        self.timings[phase.value] = elapsed
        self.emit(PhaseFinished(phase, elapsed, message))

    def fail(self, phase: Phase, reason: str, lines: Sequence[str] = (), *,
             clean: bool = True) -> Any:
        self.emit(LifecycleFailed(phase, reason, tuple(lines), clean))
        raise LifecycleError(phase, reason, lines)

    def done(self, action: str, message: str, version: str | None = None) -> None:
        self.timings["total"] = time.monotonic() - self.t0
        self.emit(LifecycleDone(action, dict(self.timings), message, version))


def _proven_by(record: LaunchRecord, probe: dict[str, Any]) -> bool:
    """The probed pid is the record's process: alive, same start time and boot, and (unless
    adopted) our launch id in its environment."""
    return bool(
        probe.get("pid_alive")
        and probe.get("start_ticks") == record.start_ticks
        and probe.get("boot_id") == record.boot_id
        and (record.origin == "adopted" or probe.get("launch_ok"))
    )


def _group_outlives_leader(record: LaunchRecord, probe: dict[str, Any]) -> bool:
    return bool(not probe.get("pid_alive") and probe.get("group")
                and record.pgid == record.pid)
