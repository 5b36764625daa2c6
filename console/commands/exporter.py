"""`plateau exporter [--listen 127.0.0.1:9464] [HOST ...|--demo]`: the fleet as OpenMetrics.

One session per host (the observers the console runs: GPU agent, log follower, status poll,
/metrics scrape) and an endpoint Prometheus scrapes: GPUs, server, load, the last sweep's peak,
knee and causes and the last A/B verdict from the history, and the exporter's own cost. It
listens on loopback unless told otherwise. Runs until Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

from console.errors import UsageError

if TYPE_CHECKING:
    from console.config_models import HostConfig, PlateauConfig

DEFAULT_LISTEN = "127.0.0.1:9464"  # 9464: the port OpenTelemetry's Prometheus exporters use


def listen_address(text: str) -> tuple[str, int]:
    """`HOST:PORT` or `[V6]:PORT` (port 0: any free one)."""
    address, sep, port_text = text.rpartition(":")
    if not sep or not port_text.isdigit() or int(port_text) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r}: expected HOST:PORT, e.g. {DEFAULT_LISTEN}")
    address = address.removeprefix("[").removesuffix("]")
    if not address:
        raise argparse.ArgumentTypeError(f"{text!r}: name the address to listen on")
    return address, int(port_text)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "exporter",
        help="serve the hosts' GPUs, servers and Plateau's conclusions to Prometheus",
        description="An OpenMetrics endpoint (/metrics) for Prometheus: per host its GPUs, "
        "SGLang server and load, the last sweep's peak, knee and causes and the last A/B "
        "verdict (from the history), and the exporter's own cost. Grafana dashboard: "
        "docs/grafana/plateau.json.",
    )
    parser.add_argument("hosts", nargs="*", metavar="HOST",
                        help="hosts from the config (default: all of them)")
    parser.add_argument("--demo", action="store_true",
                        help="start the simulated demo host and export it")
    parser.add_argument("--listen", type=listen_address, default=DEFAULT_LISTEN,
                        metavar="ADDR:PORT",
                        help=f"where to listen (default {DEFAULT_LISTEN}; port 0: a free one)")
    parser.add_argument("--db", type=Path,
                        help="history database (else $PLATEAU_DB, else the user data dir)")
    parser.add_argument("--seed", type=int, default=None, help="demo simulator seed")
    parser.set_defaults(handler=_run)


async def _run(args: argparse.Namespace) -> int:
    from console.store.paths import default_db_path

    if args.demo and args.hosts:
        raise UsageError("give HOSTs or --demo, not both")
    db = args.db or default_db_path()
    async with _hosts(args) as (config, hosts, launch_profile):
        return await _export(args, config, hosts, launch_profile, db)


@contextlib.asynccontextmanager
async def _hosts(args: argparse.Namespace
                 ) -> AsyncIterator[tuple[PlateauConfig, list[HostConfig], str | None]]:
    """The configured hosts asked for; with --demo, the demo host (its server and run dir
    removed when we go, however we go: console.server.guard)."""
    from console.config import load_config

    if not args.demo:
        config = load_config(args.config).config
        try:
            hosts = [config.host(name) for name in args.hosts] or list(config.hosts)
        except KeyError as exc:
            raise UsageError(str(exc.args[0])) from None
        if not hosts:
            raise UsageError("no hosts configured: name some in the config, or use --demo")
        yield config, hosts, None
        return
    from console.demo import DEMO_HOST, demo_profile, temp_demo
    from console.host.local import LocalTransport
    from console.server.guard import owner_guard

    config, _run_dir = temp_demo(args.seed, startup_seconds=1.0)
    host = config.host(DEMO_HOST)
    async with owner_guard(LocalTransport(DEMO_HOST, run_dir=host.run_dir), host,
                           stop_server=True, remove_run_dir=True):
        yield config, [host], demo_profile(config)


async def _export(args: argparse.Namespace, config: PlateauConfig, hosts: list[HostConfig],
                  launch_profile: str | None, db: Path) -> int:
    from console.fleet.exporter import Fleet, serve, stale_after
    from console.fleet.history import HistoryReader
    from console.gc_policy import pace_gc
    from console.session.service import HostSession

    pace_gc()  # a long-running watcher of many hosts, as the console is
    sessions = [HostSession(h, config, launch_profile=launch_profile, store_path=db)
                for h in hosts]
    fleet = Fleet(sessions, history=HistoryReader(db),
                  stale_after_s=stale_after(config.ui.gpu_interval_s))
    address, port = args.listen
    try:
        runner, bound = await serve(fleet, address, port)
    except OSError as exc:
        raise UsageError(f"--listen {address}:{port}: {exc.strerror or exc}") from None
    try:
        await fleet.start()
        shown = f"[{address}]" if ":" in address else address
        names = ", ".join(h.name for h in hosts)
        print(f"plateau exporter: serving http://{shown}:{bound}/metrics for {names}",
              file=sys.stderr, flush=True)
        if launch_profile is not None:  # the demo: somewhere to send requests to see load
            server_port = config.profiles[launch_profile].port
            print(f"plateau exporter: demo server http://127.0.0.1:{server_port}",
                  file=sys.stderr, flush=True)
        if not _loopback(address):
            print(f"plateau exporter: listening beyond loopback ({address}): anyone who can "
                  "reach it sees these hosts", file=sys.stderr, flush=True)
        await _until_stopped()
    finally:
        if args.demo:
            for session in sessions:
                await session.stop_server()
        await fleet.close()
        await runner.cleanup()
    return 0


def _loopback(address: str) -> bool:
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


async def _until_stopped() -> None:
    """Until SIGTERM or SIGINT (Ctrl-C), either of which ends the exporter cleanly."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
