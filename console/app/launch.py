"""Running the console: interactively (`plateau [HOST]`, `plateau demo`), on a recording
(`plateau replay FILE`) or headless (`plateau snapshot`). Builds one HostSession per
configured host (or one ReplaySession per recorded host); closes them on exit."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from console import aio
from console.app.app import SCREENS, PlateauApp
from console.app.boot import Booted, BootPlan, FirstFrame
from console.config import LoadedConfig
from console.errors import PlateauError, UsageError
from console.store.paths import default_db_path

if TYPE_CHECKING:  # a recording, a replay and a snapshot's export: not the console's start-up
    from textual.pilot import Pilot

    from console.session.recording import Recorder, Recording
    from console.session.replay import ReplaySession
    from console.session.service import HostSession


@dataclass
class Launch:
    loaded: LoadedConfig
    host: str | None = None
    launch_profile: str | None = None
    stop_on_exit: bool = False
    store_path: Path | None = None
    theme: str | None = None
    screen: str | None = None
    """None: the fleet overview when two or more hosts are configured (and none was named),
    else the dashboard."""
    profile_notes: tuple[str, ...] = ()
    record: Path | None = None
    """`--record FILE`: every session event goes to this recording as well."""
    profiles_dir: Path | None = None
    """Where the flags editor saves (None: beside the config file, or the config dir)."""
    server_gate: Callable[[], Awaitable[None]] | None = None
    """Awaited before the active host's session starts a server (the demo's owner guard)."""


def _with_saved_profiles(launch: Launch) -> None:
    """Profiles saved from the flags editor (`<config dir>/profiles.d/*.toml`) join the
    config's own, once per launch."""
    from console.session.profiles import with_saved_profiles

    launch.loaded, notes = with_saved_profiles(launch.loaded)
    launch.profile_notes = (*launch.profile_notes, *notes)


def _check_theme(name: str | None) -> None:
    """A theme named on the command line must exist (the config's theme only falls back with
    a note: an old config must not stop the console)."""
    if name is None:
        return
    from console.app.theming import DEFAULT_THEME, load_themes

    known = {DEFAULT_THEME, *load_themes().themes}
    if name not in known:
        raise UsageError(f"--theme: unknown theme {name!r} (known: {', '.join(sorted(known))})")


def build_sessions(launch: Launch) -> tuple[list[HostSession], str]:
    from console.session.service import HostSession

    _check_theme(launch.theme)
    _with_saved_profiles(launch)
    config = launch.loaded.config
    if not config.hosts:
        raise UsageError("no hosts configured: add a [[hosts]] entry, or try `plateau demo`")
    try:
        active = config.host(launch.host).name
    except KeyError as exc:
        raise UsageError(str(exc.args[0])) from None
    if launch.store_path is None:
        launch.store_path = default_db_path()
    sessions = [
        HostSession(
            host,
            config,
            launch_profile=launch.launch_profile if host.name == active else None,
            server_gate=launch.server_gate if host.name == active else None,
            store_path=launch.store_path,
        )
        for host in config.hosts
    ]
    return sessions, active


def _make_app(launch: Launch, sessions: list[HostSession], active: str) -> PlateauApp:
    screen = launch.screen or ("fleet" if len(sessions) > 1 and launch.host is None
                               else "dashboard")
    if screen not in SCREENS:
        raise UsageError(f"unknown screen {screen!r} (have: {', '.join(SCREENS)})")
    return PlateauApp(
        launch.loaded,
        sessions,
        active_host=active,
        store_path=launch.store_path,
        start_screen=screen,
        theme=launch.theme,
        startup_notes=launch.profile_notes,
        profiles_dir=launch.profiles_dir,
    )


async def _shutdown(sessions: list[HostSession], active: str, stop_server: bool) -> None:
    for session in sessions:
        if stop_server and session.host.name == active:
            with contextlib.suppress(Exception):
                await aio.wait_for(session.stop_server(), timeout=60)
        with contextlib.suppress(Exception):
            await aio.wait_for(session.close(), timeout=10)


async def run_console(launch: Launch) -> int:
    sessions, active = build_sessions(launch)
    recorder = record_sessions(launch.record, sessions)
    app = _make_app(launch, sessions, active)
    try:
        await app.run_async()
    finally:
        await _shutdown(sessions, active, launch.stop_on_exit)
        if recorder is not None:
            recorder.close()
    return int(app.return_code or 0)


async def run_booting_console(
    first: FirstFrame, make_launch: Callable[[], Awaitable[Launch]], *,
    theme: str | None = None,
) -> int:
    """The console drawn from `first` at once, then booted: `make_launch` (the config, the
    demo's server guard), the sessions and the recording are made once that frame is on the
    terminal (console.app.boot). A boot that fails ends the console; its error is raised here,
    after the terminal is restored, so the command prints it as any other."""
    _check_theme(theme)  # before anything is drawn
    made: list[tuple[list[HostSession], str, Recorder | None, Launch]] = []

    async def boot() -> Booted:
        launch = await make_launch()
        sessions, active = build_sessions(launch)
        made.append((sessions, active, record_sessions(launch.record, sessions), launch))
        return Booted(launch.loaded, sessions, active, store_path=launch.store_path,
                      profiles_dir=launch.profiles_dir, startup_notes=launch.profile_notes)

    app = PlateauApp(None, boot=BootPlan(first, boot), theme=theme)
    try:
        await app.run_async()
    finally:
        for sessions, active, recorder, launch in made:
            await _shutdown(sessions, active, launch.stop_on_exit)
            if recorder is not None:
                recorder.close()
    if app.boot_error is not None:
        raise app.boot_error
    return int(app.return_code or 0)


def record_sessions(path: Path | None, sessions: list[HostSession]) -> Recorder | None:
    """Every event of `sessions` also goes to the recording at `path` (None: no recording)."""
    if path is None:
        return None
    from console.session.recording import Recorder

    recorder = Recorder(path, [session.host for session in sessions])
    for session in sessions:
        session.observer = recorder.write
    return recorder


def replay_app(
    recording: Recording, *, speed: float = 1.0, host: str | None = None,
    theme: str | None = None,
) -> tuple[PlateauApp, list[ReplaySession]]:
    """The console on a recording: one ReplaySession per recorded host, played at `speed`."""
    from console.session.replay import ReplaySession

    if not recording.hosts:
        raise UsageError("the recording names no host")
    # The recording carries no launch profiles (a replay launches nothing).
    from console.config_models import PlateauConfig

    hosts = [h.model_copy(update={"profile": None}) for h in recording.hosts]
    config = PlateauConfig(hosts=hosts)
    try:
        active = config.host(host).name
    except KeyError as exc:
        raise UsageError(str(exc.args[0])) from None
    sessions = [
        ReplaySession.from_recording(h, recording.for_host(h.name), speed,
                                     started_at=recording.started_at or None)
        for h in hosts
    ]
    from console.session.events import Problem

    for session in sessions:  # what reading left out, said in the event log
        session.script = [Problem(session.host.name, "replay", note, level="warning")
                          for note in recording.notes]
    app = PlateauApp(LoadedConfig(config, None), sessions, active_host=active, theme=theme)
    return app, sessions


async def run_replay(
    recording: Recording, *, speed: float = 1.0, host: str | None = None,
    theme: str | None = None,
) -> int:
    app, sessions = replay_app(recording, speed=speed, host=host, theme=theme)
    try:
        await app.run_async()
    finally:
        for session in sessions:
            with contextlib.suppress(Exception):
                await session.close()
    return int(app.return_code or 0)


LOG_HOST = "log"


def log_app(
    path: str, bench: list[str] | None = None, *, theme: str | None = None,
    screen: str = "dashboard",
) -> tuple[PlateauApp, ReplaySession]:
    """The console on a server log (`plateau --log FILE [--bench FILE ...]`): its lines in the
    log view, its diagnosis in the Why view; a replay, so it runs nothing on any host."""
    from console.config_models import HostConfig, PlateauConfig
    from console.session.log_file import read_log_file
    from console.session.replay import ReplaySession

    _check_theme(theme)
    if screen not in SCREENS:
        raise UsageError(f"unknown screen {screen!r} (have: {', '.join(SCREENS)})")
    log = read_log_file(LOG_HOST, path, bench)
    host = HostConfig(name=LOG_HOST, local=True)  # a replay: never reached
    session = ReplaySession(host=host, script=log.events, label=log.label,
                            log_diagnosis=log.diagnosis)
    app = PlateauApp(LoadedConfig(PlateauConfig(hosts=[host]), None), [session],
                     active_host=LOG_HOST, theme=theme, start_screen=screen)
    return app, session


async def run_log(path: str, bench: list[str] | None = None, *, theme: str | None = None,
                  screen: str = "dashboard") -> int:
    app, session = log_app(path, bench, theme=theme, screen=screen)
    try:
        await app.run_async()
    finally:
        with contextlib.suppress(Exception):
            await session.close()
    return int(app.return_code or 0)


Condition = Callable[[PlateauApp], bool]


@dataclass
class SnapshotSpec:
    out: Path
    size: tuple[int, int] = (160, 48)
    after_s: float | None = None
    until: str | None = None  # "ready" | "sweep-done"
    timeout_s: float = 180.0
    preset: str = "quick"


async def take_snapshot(launch: Launch, spec: SnapshotSpec) -> str:
    """Run the real app headless, wait as asked, write the screen; returns a description."""
    sessions, active = build_sessions(launch)
    app = _make_app(launch, sessions, active)
    app.tick_seconds = None  # no clock-driven redraws mid-capture
    outcome: dict[str, object] = {}

    from console.app.screenshot import export_svg, export_text

    async def pilot_body(pilot: Pilot[object]) -> None:
        try:
            await _wait(app, spec)
            await pilot.pause()
            await pilot.wait_for_scheduled_animations()
            text = export_text(app) if spec.out.suffix == ".txt" else export_svg(app)
            spec.out.write_text(text, encoding="utf-8")
            outcome["ok"] = True
        except Exception as exc:  # reported after the app has shut down
            outcome["error"] = exc
        finally:
            app.exit(0)

    try:
        await app.run_async(headless=True, size=spec.size, auto_pilot=pilot_body)
        state = app.active_state
        summary = f"host {state.host}, server {state.server_state}"
    finally:
        await _shutdown(sessions, active, launch.stop_on_exit)
    crash = getattr(app, "_exception", None)
    if crash is not None:
        raise PlateauError(f"snapshot failed: the console crashed: {type(crash).__name__}: {crash}")
    error = outcome.get("error")
    if isinstance(error, PlateauError):
        raise error
    if error is not None:
        raise PlateauError(f"snapshot failed: {error}")
    if not outcome.get("ok"):
        raise PlateauError("snapshot failed: the app exited before the capture")
    width, height = spec.size
    return f"{spec.out}: {width}x{height}, {summary}"


async def _wait(app: PlateauApp, spec: SnapshotSpec) -> None:
    if spec.until is None:
        await asyncio.sleep(spec.after_s if spec.after_s is not None else 1.0)
        return
    state = app.active_state
    await _wait_for(lambda: state.server_state == "ready", spec.timeout_s, app, "server ready")
    if spec.until == "sweep-done":
        before = state.sweep.run_id, len(state.sweep.points)
        await app.active_session.start_sweep(spec.preset)

        def finished() -> bool:
            sweep = state.sweep
            return not sweep.running and (sweep.run_id, len(sweep.points)) != before

        await _wait_for(finished, spec.timeout_s, app, "sweep done")
        if state.sweep.last_ok is False:
            raise PlateauError(f"sweep failed: {state.sweep.detail}")
    # Let the last messages land on the screen.
    await asyncio.sleep(0.5)


async def _wait_for(
    condition: Callable[[], bool], timeout_s: float, app: PlateauApp, what: str
) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        state = app.active_state
        if state.server_state == "failed" and what == "server ready":
            raise PlateauError(f"server failed before {what}: {state.server_detail}")
        if state.connection == "failed":
            raise PlateauError(f"cannot reach host {state.host}: {state.connection_detail}")
        if time.monotonic() > deadline:
            raise PlateauError(
                f"timed out after {timeout_s:.0f}s waiting for {what} "
                f"(server {state.server_state}, connection {state.connection})"
            )
        await asyncio.sleep(0.1)

