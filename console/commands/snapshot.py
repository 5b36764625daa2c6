"""`plateau snapshot`: run the real console headless, wait, and write the screen to a file.

    plateau snapshot --demo --seed 1 --until ready --size 160x48 --out dash.svg
    plateau snapshot gpu-box-1 --after 5 --screen events --out events.txt
    plateau snapshot --after 5 --screen fleet --size 120x40 --out fleet.txt  (every host)
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from console.commands import argtypes
from console.config import load_config
from console.errors import UsageError

SCREENS = ("dashboard", "fleet", "history", "compare", "topology", "events", "config")


def _size(text: str) -> tuple[int, int]:
    match = re.fullmatch(r"(\d{2,4})x(\d{2,4})", text.strip())
    if not match:
        raise argparse.ArgumentTypeError(f"size must look like 160x48, got {text!r}")
    width, height = int(match.group(1)), int(match.group(2))
    if width < 40 or height < 10:
        raise argparse.ArgumentTypeError("size must be at least 40x10")
    return width, height


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("snapshot", help="run the console headless and save the screen")
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--demo", action="store_true", help="use the simulated demo host")
    parser.add_argument("host", nargs="?", help="host name from the config")
    parser.add_argument("--seed", type=int, default=None, help="demo simulator seed")
    wait = parser.add_mutually_exclusive_group()
    wait.add_argument("--after", type=argtypes.seconds_or_zero, metavar="SECONDS",
                      help="capture after SECONDS")
    wait.add_argument(
        "--until", choices=("ready", "sweep-done"),
        help="capture when the server is ready, or run a sweep (--preset) and capture when "
        "it is done",
    )
    parser.add_argument("--timeout", type=argtypes.seconds, default=180.0,
                        help="give up after SECONDS")
    parser.add_argument("--preset", default="quick", help="sweep preset for --until sweep-done")
    parser.add_argument("--size", type=_size, default=(160, 48), help="WIDTHxHEIGHT")
    parser.add_argument("--screen", choices=SCREENS, default="dashboard")
    parser.add_argument("--theme", help="theme name (default: the config's)")
    parser.add_argument("--out", type=Path, required=True, help="FILE.svg or FILE.txt")
    parser.set_defaults(handler=_run)


async def _run(args: argparse.Namespace) -> int:
    if args.out.suffix not in (".svg", ".txt"):
        raise UsageError(f"--out must end in .svg or .txt, got {args.out}")
    if args.demo and args.host:
        raise UsageError("give either --demo or HOST, not both")
    if not args.out.parent.exists():
        raise UsageError(f"--out: directory {args.out.parent} does not exist")
    from console.app.launch import Launch, SnapshotSpec, take_snapshot

    if args.demo:
        from console.config import LoadedConfig
        from console.demo import demo_profile, temp_demo

        config, run_dir = temp_demo(args.seed, startup_seconds=2.0)
        loaded = LoadedConfig(config, None)
        launch = Launch(
            loaded,
            launch_profile=demo_profile(loaded.config),
            stop_on_exit=True,
            store_path=run_dir / "history.sqlite",
            theme=args.theme,
            screen=args.screen,
        )
    else:
        launch = Launch(
            load_config(args.config), host=args.host, theme=args.theme, screen=args.screen
        )
    spec = SnapshotSpec(
        out=args.out, size=args.size, after_s=args.after, until=args.until,
        timeout_s=args.timeout, preset=args.preset,
    )
    print(await take_snapshot(launch, spec))
    return 0
