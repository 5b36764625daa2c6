"""`plateau replay FILE [--speed X] [HOST]`: the console on a recording, as it happened.

GPUs, log, server strip, sweeps and the event log play back at the recorded pace (or `--speed`
times faster; 0 plays everything at once). Commands (restart, sweep) are noted, not run: a
replay touches no host."""

from __future__ import annotations

import argparse
from pathlib import Path

from console.errors import UsageError


def _speed(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number like 1, 4 or 0: {text!r}") from None
    if value < 0 or value != value:
        raise argparse.ArgumentTypeError("speed must be 0 (all at once) or more")
    return value


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "replay",
        help="open the console on a recording (plateau record / --record)",
        description="Play a recorded session back in the console: at the recorded pace, "
        "--speed times faster, or all at once with --speed 0.",
    )
    parser.add_argument("file", type=Path, help="a recording (.jsonl)")
    parser.add_argument("host", nargs="?", help="recorded host to show first")
    parser.add_argument("--speed", type=_speed, default=1.0, metavar="X",
                        help="playback speed (default 1: as recorded; 0: all at once)")
    parser.add_argument("--theme", help="theme for this run")
    parser.set_defaults(handler=_run)


async def _run(args: argparse.Namespace) -> int:
    from console.app.launch import run_replay  # Textual only when the console runs
    from console.session.recording import read_recording

    if not args.file.is_file():
        raise UsageError(f"no recording at {args.file}")
    recording = read_recording(args.file)
    return await run_replay(recording, speed=args.speed, host=args.host, theme=args.theme)
