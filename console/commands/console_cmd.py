"""`plateau [HOST]`: the console on a configured host (the default or first one)."""

from __future__ import annotations

import argparse
from pathlib import Path

from console.config import load_config
from console.errors import UsageError
from console.gc_policy import gc_paused


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("console", help="open the console on HOST (default: the first host)")
    parser.add_argument("host", nargs="?", help="host name from the config")
    parser.add_argument("--theme", help="theme for this run (overrides the config)")
    parser.add_argument(
        "--screen", default=None,
        help="screen to open: fleet, dashboard, history, compare, topology, events, config "
             "(default: fleet with two or more hosts, else dashboard)",
    )
    parser.add_argument("--record", type=Path, metavar="FILE",
                        help="also record the session to FILE (plateau replay FILE)")
    parser.add_argument("--log", metavar="FILE",
                        help="open the console on an SGLang server log (as `plateau diagnose "
                        "--log`): its lines, and why it plateaus in the Why view (W)")
    parser.add_argument("--bench", metavar="FILE", action="append", default=[],
                        help="with --log: bench_serving --output-file JSONL or `plateau sweep "
                        "--json` output for the client's side (repeatable)")
    parser.set_defaults(handler=_run)


async def _run(args: argparse.Namespace) -> int:
    with gc_paused():  # start-up without collections (the app resumes them at its first frame)
        return await _console(args)


async def _console(args: argparse.Namespace) -> int:
    from console.app.launch import Launch, run_console  # Textual only when the console runs

    if args.log is not None:
        return await _log(args)
    if args.bench:
        raise UsageError("--bench needs --log FILE")
    loaded = load_config(args.config)
    return await run_console(
        Launch(loaded, host=args.host, theme=args.theme, screen=args.screen, record=args.record)
    )


async def _log(args: argparse.Namespace) -> int:
    from console.app.launch import run_log

    if args.host is not None or args.record is not None:
        raise UsageError("--log FILE opens the console on a file: no HOST, no --record")
    return await run_log(args.log, args.bench, theme=args.theme,
                         screen=args.screen or "dashboard")
