"""`plateau record [HOST | --demo] --out FILE [--seconds S]`: record a host's session headless.

The same event feed the console shows (GPUs, log, server status and stats, problems) goes to
FILE, until --seconds pass or Ctrl-C. `plateau replay FILE` opens the console on it; `plateau
[HOST] --record FILE` records while you watch."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from console import aio
from console.errors import PlateauError, UsageError

if TYPE_CHECKING:
    from console.session.events import SessionEvent


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "record",
        help="record a host's session (GPUs, log, server) to a file, headless",
        description="Record the console's event feed for HOST without a screen; replay it "
        "with `plateau replay FILE`.",
    )
    parser.add_argument("host", nargs="?", help="host name from the config (default: first)")
    parser.add_argument("--demo", action="store_true",
                        help="start the simulated demo host and record it")
    parser.add_argument("--out", type=Path, required=True, metavar="FILE",
                        help="the recording to write (.jsonl)")
    parser.add_argument("--seconds", type=float, default=None, metavar="S",
                        help="stop after S seconds (default: until Ctrl-C)")
    parser.add_argument("--seed", type=int, default=None, help="demo simulator seed")
    parser.set_defaults(handler=_run)


async def _run(args: argparse.Namespace) -> int:
    from console.config import load_config
    from console.demo import demo_profile, temp_demo
    from console.session.recording import Recorder
    from console.session.service import HostSession

    if args.demo and args.host:
        raise UsageError("give a HOST or --demo, not both")
    if args.seconds is not None and not args.seconds > 0:
        raise UsageError("--seconds must be more than 0")
    if not args.out.parent.is_dir():
        raise UsageError(f"--out: directory {args.out.parent} does not exist")
    if args.demo:
        config, _run_dir = temp_demo(args.seed, startup_seconds=1.0)
        launch_profile: str | None = demo_profile(config)
    else:
        config = load_config(args.config).config
        launch_profile = None
    try:
        host = config.host(None if args.demo else args.host)
    except KeyError as exc:
        raise UsageError(str(exc.args[0])) from None
    session = HostSession(host, config, launch_profile=launch_profile)
    recorder = Recorder(args.out, [host])
    connection = _Connection()

    def observe(event: SessionEvent) -> None:
        connection.see(event)
        recorder.write(event)

    session.observer = observe

    async def drain() -> None:
        async for _event in session.events():
            pass

    drainer = asyncio.ensure_future(drain())
    await session.start()
    try:
        with contextlib.suppress(asyncio.TimeoutError):
            await aio.wait_for(asyncio.shield(drainer), timeout=args.seconds)
    finally:
        session.observer = None  # our own shutdown (and the demo's stop) is not the host's story
        recorder.close()
        if args.demo:
            await session.stop_server()
        await session.close()
        await drainer
    if recorder.error is not None:
        raise UsageError(f"{args.out}: {recorder.error}")
    print(f"recorded {recorder.count} event(s) of {host.name} to {args.out}", file=sys.stderr)
    if not connection.ever:
        # Nothing of the host is in the file: a recording of "connecting… failed" is no
        # success (issue 26.9: it exited 0).
        raise PlateauError(f"never connected to {host.name}"
                           + (f": {connection.last}" if connection.last else ""))
    return 0


class _Connection:
    """Whether the session ever connected, and the last word on the connection."""

    def __init__(self) -> None:
        self.ever = False
        self.last = ""

    def see(self, event: SessionEvent) -> None:
        from console.session.events import ConnectionChanged

        if isinstance(event, ConnectionChanged):
            self.ever = self.ever or event.status == "connected"
            detail = event.detail.removeprefix(f"{event.host}: ")
            self.last = detail or event.status
