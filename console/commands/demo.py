"""`plateau demo`: the console on a simulated local host; no GPU, no SSH, no network.

Launches the simulated SGLang server through the server lifecycle (like a real restart),
and stops it when the console exits.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from console.commands import argtypes
from console.gc_policy import gc_paused

if TYPE_CHECKING:
    from console.app.boot import FirstFrame
    from console.app.launch import Launch
    from console.config import LoadedConfig


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
    from console.app.launch import run_booting_console

    # The user's config file, if there is one, is read (and validated) before anything is
    # drawn: a bad file is its one-line error, not a console that flashes and ends. Without one
    # the console draws its first frame before the config's models exist (console.app.boot).
    user = _user_config(args.config)
    if args.run_dir is not None:
        _make_run_dir(args.run_dir)
    async with contextlib.AsyncExitStack() as cleanup:
        return await run_booting_console(
            _first_frame(user), lambda: _launch(args, user, cleanup), theme=args.theme)


def _make_run_dir(path: Path) -> None:
    """`--run-dir`, made now if it is not there: a path that cannot be one is the command's
    one-line error before anything is drawn (it was a traceback)."""
    from console.errors import UsageError
    from console.text import sanitize

    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--run-dir {sanitize(str(path))}: {exc.strerror or exc}") from None


def _user_config(explicit: str | None) -> LoadedConfig | None:
    from console.config import discover_config_path

    path, _why = discover_config_path(explicit)
    if path is None:
        return None
    from console.config import load_config_file

    return load_config_file(path)


def _first_frame(user: LoadedConfig | None) -> FirstFrame:
    """What the demo console shows before its boot: its one host, named as the booted config
    names it, with the user's [ui], keymap and theme (console.demo_user takes the same)."""
    from console.app.boot import FirstFrame
    from console.demo import DEMO_HOST, DEMO_PROFILE

    first = FirstFrame(hosts=(DEMO_HOST,), active_host=DEMO_HOST, profile=DEMO_PROFILE)
    if user is None:
        return first
    mine = user.config
    theme = mine.theme if user.path is not None else first.theme
    return dataclasses.replace(first, ui=mine.ui, keymap=dict(mine.keymap), theme=theme)


async def _launch(
    args: argparse.Namespace, user: LoadedConfig | None, cleanup: contextlib.AsyncExitStack
) -> Launch:
    """The demo's config and its server's guard (the console's boot)."""
    from console.app.launch import Launch
    from console.config import LoadedConfig, load_config
    from console.demo import DEMO_HOST, demo_profile, temp_demo
    from console.demo_user import demo_with_user
    from console.host.local import LocalTransport
    from console.server.guard import OwnerGuard
    from console.store.paths import default_db_path

    config, _run_dir = temp_demo(args.seed, args.startup_seconds, args.run_dir,
                                 real_restarts=True)
    # The server and the temp run dir die with this process, however it ends (SIGKILL, the
    # terminal closing): a host-side guard holds a pipe from us. Awaited only before the
    # session starts the server: its start-up overlaps the session's.
    # Its transport keeps the guard's program in the run dir (as the session's does).
    host = config.host(DEMO_HOST)
    temporary = args.run_dir is None and not args.keep_server
    guard = await OwnerGuard.spawn(LocalTransport(DEMO_HOST, run_dir=host.run_dir), host,
                                   stop_server=not args.keep_server, remove_run_dir=temporary)
    cleanup.push_async_callback(guard.close)
    # The user's [ui], [keymap], presets and theme, and the profiles they saved in a demo.
    config, profiles_dir, notes = demo_with_user(config, user or load_config(None))
    loaded = LoadedConfig(config, None)
    return Launch(
        loaded,
        launch_profile=demo_profile(loaded.config),
        stop_on_exit=not args.keep_server,
        # The user's history: demo runs show in `plateau history` like any other (host demo).
        store_path=args.db or default_db_path(),
        record=args.record,
        profiles_dir=profiles_dir,
        profile_notes=tuple(notes),
        server_gate=guard.ready,
    )
