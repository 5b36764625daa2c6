"""`plateau server status|start|stop|restart|adopt [HOST | --demo] [--profile NAME]`.

Runs the same state machine as the console's restart key, printing each phase; a failed phase
exits non-zero with its reason and the relevant log lines. Stop and restart signal only a
server whose launch record proves Plateau started it; `adopt` shows what listens on the
profile's port (pid and command line) and, given `--pid N`, takes that process over.
"""

from __future__ import annotations

import argparse
import shlex
import sys

from console.commands import argtypes
from console.config import load_config
from console.config_models import PlateauConfig
from console.engines import engine_of_profile
from console.errors import UsageError
from console.host.factory import transport_for
from console.jobs import server as server_jobs
from console.jobs.target import standing_demo
from console.server.events import (
    CommandShown,
    LifecycleDone,
    LifecycleEvent,
    LogLine,
    PhaseFinished,
    PhaseProgress,
    PhaseStarted,
)
from console.server.lifecycle import (
    LifecycleOptions,
    ServerLifecycle,
    ServerStatus,
    hidden_text,
)
from console.text import sanitize, sanitize_lines

ACTIONS = ("status", "start", "stop", "restart", "adopt")
EXIT_NOT_RUNNING = 3


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "server",
        help="status, start, stop, restart or adopt the SGLang server of a host",
        description="Start, stop or restart a host's SGLang server with a profile from the "
        "config. Each phase is printed; a failure exits non-zero with the reason.",
    )
    parser.add_argument("action", choices=ACTIONS)
    parser.add_argument("host", nargs="?", help="host name from the config (default: first)")
    parser.add_argument("--demo", action="store_true", help="the local simulated demo host")
    parser.add_argument("--profile", metavar="NAME", type=argtypes.plain_text,
                        help="launch profile (start/restart)")
    parser.add_argument("--drain-timeout", type=argtypes.seconds_or_zero, default=30.0, metavar="S",
                        help="seconds to let the server drain after SIGTERM before SIGKILL")
    parser.add_argument("--startup-timeout", type=argtypes.seconds, default=1800.0, metavar="S",
                        help="seconds to wait for the server to become ready")
    parser.add_argument("--wait", action="store_true",
                        help="queue behind a running sweep/restart instead of refusing")
    parser.add_argument("--pid", type=int, metavar="N",
                        help="adopt: the pid (shown by `adopt` without --pid) to take over")
    parser.add_argument("-v", "--verbose", action="store_true", help="also print log lines")
    parser.set_defaults(handler=run)


class EventPrinter:
    def __init__(self, verbose: bool = False) -> None:
        self.verbose = verbose

    def __call__(self, event: LifecycleEvent) -> None:
        line: str | None = None
        if isinstance(event, PhaseStarted):
            line = f"▸ {event.phase.value}" + (f": {event.message}" if event.message else "")
        elif isinstance(event, PhaseProgress):
            line = f"  {event.phase.value}: {event.message}"
        elif isinstance(event, PhaseFinished):
            line = f"✓ {event.phase.value} ({event.elapsed_s:.2f} s)" + (
                f" {event.message}" if event.message else ""
            )
        elif isinstance(event, CommandShown):
            line = f"$ {event.command}\n  log: {event.log_path}"
        elif isinstance(event, LogLine) and self.verbose:
            line = f"  | {event.text}"
        elif isinstance(event, LifecycleDone):
            line = f"done: {event.message} ({event.timings.get('total', 0):.2f} s)"
        if line is not None:
            print(sanitize_lines(line), flush=True)  # reasons may quote the host's output


def format_status(status: ServerStatus, config: PlateauConfig | None = None) -> str:
    record = status.record
    if not status.running:
        last = f" (last: {record.profile}, {record.state})" if record else ""
        return sanitize(f"{status.host}: no server running{last}")
    assert record is not None
    uptime = _duration(status.uptime_s or 0.0)
    return sanitize_lines("\n".join(
        [
            f"{status.host}: {status.health.upper()}",
            f"  profile  {record.profile} ({record.origin})",
            f"  pid      {record.pid} (pgid {record.pgid})",
            f"  port     {record.host}:{record.port}",
            f"  uptime   {uptime}",
            f"  version  {_engine_title(config, record.profile)} {status.version or 'unknown'}",
            f"  log      {record.log_path or 'unknown'}",
        ]
    ))


async def _adopt(life: ServerLifecycle, config: PlateauConfig, args: argparse.Namespace) -> int:
    """Without --pid: show what listens on the profile's port, so the operator can check its
    command line. With --pid N: adopt that process (stop/restart may then signal it)."""
    name, profile = server_jobs.pick_profile(config, args.profile, life.host.profile)
    found, hidden = await life.port_users(profile.port, profile.host)
    if not found and hidden:
        print(f"{life.host.name}: port {profile.port} (profile {name}) is used by "
              f"{hidden_text(hidden)}")
        return 1
    if not found:
        print(f"{life.host.name}: nothing listens on port {profile.port} (profile {name})")
        return 1
    if args.pid is None:
        for listener in found:
            shown = sanitize(shlex.join(str(a) for a in listener.get("argv", [])))[:400]
            print(f"pid {listener['pid']}: {shown}")
        print(f"check the command line, then: plateau server adopt {life.host.name} "
              f"--pid {found[0]['pid']}")
        return 1
    record = await life.adopt(profile.port, args.pid, bind_host=profile.host, wait=args.wait)
    print(f"adopted pid {record.pid} on port {record.port}: {shlex.join(record.argv)[:400]}")
    return 0


def _engine_title(config: PlateauConfig | None, profile: str) -> str:
    """How the console names the engine of the profile the server was started with."""
    launch = config.profiles.get(profile) if config is not None else None
    return engine_of_profile(launch).title


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


async def run(args: argparse.Namespace) -> int:
    if args.demo and args.host:
        raise UsageError("give a HOST or --demo, not both")
    config = standing_demo() if args.demo else load_config(args.config).config
    try:
        host = config.host(args.host)
    except KeyError as exc:
        raise UsageError(str(exc.args[0])) from None
    transport = transport_for(host)
    await transport.connect()
    try:
        life = server_jobs.lifecycle_for(
            transport,
            host,
            options=LifecycleOptions(
                drain_timeout_s=args.drain_timeout, startup_timeout_s=args.startup_timeout
            ),
        )
        printer = EventPrinter(args.verbose)
        if args.action == "status":
            status = await life.status()
            print(format_status(status, config))
            return 0 if status.running else EXIT_NOT_RUNNING
        if args.action == "adopt":
            return await _adopt(life, config, args)
        if args.action == "stop":
            await server_jobs.stop(life, printer, wait=args.wait, config=config)
        elif args.action == "start":
            await server_jobs.start(life, config, args.profile, printer, wait=args.wait)
        else:
            await server_jobs.restart(life, config, args.profile, printer, wait=args.wait)
        return 0
    finally:
        await transport.close()
        sys.stdout.flush()
