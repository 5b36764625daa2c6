"""`plateau demo`: the console on a simulated local host; no GPU, no SSH, no network.

Launches the simulated SGLang server through the server lifecycle (like a real restart),
and stops it when the console exits.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from console.commands import argtypes
from console.gc_policy import gc_paused

if TYPE_CHECKING:
    from console.config_models import PlateauConfig
    from console.server.guard import OwnerGuard


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("demo", help="console on a simulated 8-GPU host (no GPU needed)")
    parser.add_argument("--seed", type=int, default=None, help="simulator seed (deterministic)")
    parser.add_argument(
        "--startup-seconds", type=argtypes.seconds_or_zero, default=4.0,
        help="simulated server startup time",
    )
    parser.add_argument("--run-dir", type=Path, help="where logs go (default: a temp dir)")
    parser.add_argument("--theme", help="theme for this run")
    parser.add_argument("--keep-server", action="store_true", help="leave the server running")
    parser.add_argument("--db", type=Path,
                        help="history database (else $PLATEAU_DB, else the user data dir, "
                        "where `plateau history` looks)")
    parser.add_argument("--record", type=Path, metavar="FILE",
                        help="also record the session to FILE (plateau replay FILE)")
    parser.set_defaults(handler=_run)


async def _run(args: argparse.Namespace) -> int:
    with gc_paused():  # start-up without collections (the app resumes them at its first frame)
        return await _demo(args)


async def _demo(args: argparse.Namespace) -> int:
    from console.demo import DEMO_HOST, temp_demo
    from console.host.local import LocalTransport
    from console.server.guard import OwnerGuard

    config, _run_dir = temp_demo(args.seed, args.startup_seconds, args.run_dir,
                                 real_restarts=True)
    # The server and the temp run dir die with this process, however it ends (SIGKILL, the
    # terminal closing): a host-side guard holds a pipe from us. Spawned first, awaited only
    # before the session starts the server: its start-up overlaps ours.
    # Its transport keeps the guard's program in the run dir (as the session's does).
    host = config.host(DEMO_HOST)
    temporary = args.run_dir is None and not args.keep_server
    guard = await OwnerGuard.spawn(LocalTransport(DEMO_HOST, run_dir=host.run_dir), host,
                                   stop_server=not args.keep_server, remove_run_dir=temporary)
    try:
        return await _console(args, config, guard)
    finally:
        await guard.close()


async def _console(args: argparse.Namespace, config: PlateauConfig, guard: OwnerGuard) -> int:
    from console.app.launch import Launch, run_console
    from console.config import LoadedConfig, load_config
    from console.demo import demo_profile
    from console.demo_user import demo_with_user
    from console.store.paths import default_db_path

    # The user's [ui], [keymap], presets and theme, and the profiles they saved in a demo.
    config, profiles_dir, notes = demo_with_user(config, load_config(args.config))
    loaded = LoadedConfig(config, None)
    launch = Launch(
        loaded,
        launch_profile=demo_profile(loaded.config),
        stop_on_exit=not args.keep_server,
        # The user's history: demo runs show in `plateau history` like any other (host demo).
        store_path=args.db or default_db_path(),
        theme=args.theme,
        record=args.record,
        profiles_dir=profiles_dir,
        profile_notes=tuple(notes),
        server_gate=guard.ready,
    )
    return await run_console(launch)
