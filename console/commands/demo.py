"""`plateau demo`: the console on a simulated local host; no GPU, no SSH, no network.

Launches the simulated SGLang server through the server lifecycle (like a real restart),
and stops it when the console exits.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("demo", help="console on a simulated 8-GPU host (no GPU needed)")
    parser.add_argument("--seed", type=int, default=None, help="simulator seed (deterministic)")
    parser.add_argument(
        "--startup-seconds", type=float, default=4.0, help="simulated server startup time"
    )
    parser.add_argument("--run-dir", type=Path, help="where logs go (default: a temp dir)")
    parser.add_argument("--theme", help="theme for this run")
    parser.add_argument("--keep-server", action="store_true", help="leave the server running")
    parser.add_argument("--db", type=Path,
                        help="history database (else $PLATEAU_DB, else the user data dir, "
                        "where `plateau history` looks)")
    parser.set_defaults(handler=_run)


async def _run(args: argparse.Namespace) -> int:
    from console.app.launch import Launch, run_console
    from console.config import LoadedConfig, load_config
    from console.demo import with_user_sweeps
    from console.jobs.target import demo_profile, temp_demo
    from console.store.db import default_db_path

    config, _run_dir = temp_demo(args.seed, args.startup_seconds, args.run_dir)
    # The user's own sweep presets, and the user's history: demo runs show in
    # `plateau history` like any other (host "demo").
    config = with_user_sweeps(config, load_config(args.config).config)
    loaded = LoadedConfig(config, None)
    launch = Launch(
        loaded,
        launch_profile=demo_profile(loaded.config),
        stop_on_exit=not args.keep_server,
        store_path=args.db or default_db_path(),
        theme=args.theme,
    )
    return await run_console(launch)
