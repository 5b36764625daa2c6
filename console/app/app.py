"""PlateauApp: the Textual console. Sessions (one per host) do the work; the app renders.

Data flow: a HostSession emits typed events, already folded into its HostState; a pump worker
per host turns each into a coalescing `HostChanged` message; the handler redraws the aspects
that changed on the visible screen, in place. Nothing here waits on the network: commands
(restart, sweep) are handed to the session in workers.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import deque
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import on
from textual.app import App, ScreenStackError
from textual.binding import BindingType
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from console.app.bindings import (
    ACTIONS,
    BY_ID,
    HIDDEN_WHEN_UNAVAILABLE,
    app_bindings,
    effective_keys,
    unknown_keymap_ids,
)
from console.app.contract import ConsoleApp
from console.app.messages import ActiveHostChanged, CommandSent, HostChanged
from console.app.palette import PaletteProvider
from console.app.screens.dashboard import ABPlan, DashboardScreen, progress_line
from console.app.theming import (
    DEFAULT_THEME,
    THEME_DIR,
    choose_theme,
    fallback_theme,
    load_themes,
)
from console.config import LoadedConfig
from console.config_models import ServerProfile
from console.errors import PlateauError
from console.host.transport import Transport
from console.session import adapters
from console.session.events import (
    ABUpdate,
    ConnectionChanged,
    GpuUpdate,
    HostKeyChanged,
    HostKeyUnknown,
    LogBatch,
    ServerStats,
    ServerStatus,
    SessionEvent,
    SweepDone,
    SweepPointDone,
    SweepProgress,
    TopologyUpdate,
)
from console.session.profiles import profiles_dir as default_profiles_dir
from console.session.protocol import Session
from console.session.state import Clock, EventRecord, HostState, utc_now
from console.sglang.resolved import header_text
from console.startup_gc import resume_gc
from widgets.header import HeaderInfo
from widgets.help_panel import HelpRow, Thresholds
from widgets.log_view import LogView

if TYPE_CHECKING:
    from console.app.suggest_ab import CauseAB
    from console.gpu.processes import GpuProcessRow
    from console.jobs.ab_models import ABRequest
    from widgets.flags_editor import FlagsEditorResult

# What a recording cannot do (issue 26.8): refused at the key with the reason, not asked for
# and then dropped.
REPLAY_REFUSED = frozenset({"restart", "sweep", "ab", "flags", "cancel-sweep",
                            "gpu-processes", "tune"})

CONNECTS_AT_ONCE = 8
CONNECT_HOLD_S = 5.0
RETRY_FAILED_S = 30.0

TERMINAL_GRACE_S = 0.1
"""After the first frame, how long the terminal has the CPU to itself before the sessions
start (a real terminal only; headless apps start them at once)."""

SCREENS = ("dashboard", "history", "compare", "topology", "events", "config", "why", "tune",
           "fleet")
# The dashboard's keys for the active host: on the fleet view (whose rows are every host) they
# are left out of the footer, and pressed they say to open a host first.
FLEET_HIDDEN = frozenset({"restart", "sweep", "cancel-sweep", "flags", "ab", "maximize",
                          "gpu-processes", "tune", "fleet"})
# What an off-screen host's events change that a screen shows anyway (the event log, the
# host-key question, the footer's host list); its GPU, log and load news wait for its turn.
_OFF_SCREEN_ASPECTS = frozenset({"events", "host-key", "connection", "server", "sweep"})

_ASPECTS: dict[type, tuple[str, ...]] = {
    GpuUpdate: ("gpus",),
    LogBatch: ("log",),
    ServerStats: ("stats",),
    TopologyUpdate: ("topology",),
    ConnectionChanged: ("connection",),
    ServerStatus: ("server",),
    SweepProgress: ("sweep",),
    SweepPointDone: ("sweep",),
    SweepDone: ("sweep",),
    ABUpdate: ("sweep",),
    HostKeyUnknown: ("connection", "host-key"),
    HostKeyChanged: ("connection",),
}


def _mode_screen(make: Callable[[], Screen[Any]]) -> Callable[[], Screen[Any]]:
    """A mode's screen, made when the mode is first shown, counted as styled: Textual re-parses
    every stylesheet and restyles the app twice for a new mode's screen (`_init_mode`, then
    `switch_mode`) when its count of CSS updates is behind the app's. A new screen without CSS
    of its own is styled as its widgets mount; a pending theme change still restyles it (issue
    19 item 5: two of the three stylesheet parses before the first frame)."""

    def made() -> Screen[Any]:
        screen = make()
        if hasattr(screen, "_css_update_count"):
            screen._css_update_count = screen.app._css_update_count
        return screen

    return made


def _view_screen(name: str) -> Callable[[], Screen[Any]]:
    """A table screen of console.app.screens.views, imported when first shown: the first frame
    (the dashboard) does not pay for those screens, their widgets and what fills them
    (stored runs, comparisons, diagnoses)."""

    def make() -> Screen[Any]:
        from console.app.screens import views

        screen: Screen[Any] = getattr(views, name)()
        return screen

    return _mode_screen(make)


def _fleet_screen() -> Screen[Any]:
    from console.app.screens.fleet import FleetScreen

    return FleetScreen()


def _tune_screen() -> Screen[Any]:
    """The Tune view (console.app.screens.tune), imported when first shown."""
    from console.app.screens.tune import TuneScreen

    return TuneScreen()


class PlateauApp(App[int]):
    TITLE = "plateau"
    CSS_PATH = str(THEME_DIR / "app.tcss")
    BINDINGS: ClassVar[list[BindingType]] = [*app_bindings()]
    COMMANDS = App.COMMANDS | {PaletteProvider}
    MODES: ClassVar = {
        "dashboard": _mode_screen(DashboardScreen),
        "history": _view_screen("HistoryScreen"),
        "compare": _view_screen("CompareScreen"),
        "topology": _view_screen("TopologyScreen"),
        "events": _view_screen("EventsScreen"),
        "config": _view_screen("ConfigScreen"),
        "why": _view_screen("WhyScreen"),
        "fleet": _mode_screen(_fleet_screen),


        "tune": _mode_screen(_tune_screen),
    }

    def __init__(
        self,
        loaded: LoadedConfig,
        sessions: Sequence[Session],
        *,
        active_host: str | None = None,
        clock: Clock = utc_now,
        store_path: Path | None = None,
        start_screen: str = "dashboard",
        theme: str | None = None,
        theme_dirs: Sequence[Path] = (THEME_DIR,),
        tick_seconds: float | None = 1.0,
        profiles_dir: Path | None = None,
        startup_notes: Sequence[str] = (),
    ) -> None:
        super().__init__()
        self.loaded = loaded
        self.config = loaded.config
        self.clock = clock
        self.store_path = store_path
        self.tick_seconds = tick_seconds
        self.sessions: dict[str, Session] = {s.host.name: s for s in sessions}
        if not self.sessions:
            raise ValueError("the console needs at least one host session")
        self.host_names = list(self.sessions)
        self.active_host = active_host if active_host in self.sessions else self.host_names[0]
        if start_screen not in SCREENS:
            raise ValueError(f"unknown screen {start_screen!r} (have: {', '.join(SCREENS)})")
        self.start_screen = start_screen
        self.hidden_panels: set[str] = set()
        self.on_screen_hosts: set[str] = set(self.sessions)
        # Run ids marked in the history screen (m); two marked runs are what compare shows.
        self.marked_runs: list[int] = []
        self.ab_plans: dict[str, Any] = {}  # host -> the ABPlan of the A/B it runs
        self.tunes: dict[str, Any] = {}  # host -> its console.app.tune_control.TuneControl
        self.tune_bench_for: Any = None  # (session, store) -> TuneBench; None: the session's
        self.app_events: deque[EventRecord] = deque(maxlen=500)
        self._notified: dict[str, int] = {}
        self.profiles_dir = profiles_dir or default_profiles_dir(loaded)
        for note in startup_notes:
            self.app_note("profiles", note, "warning")
        self._setup_themes(theme or self.config.theme, theme_dirs)
        self._setup_keymap()

    # -- setup --------------------------------------------------------------------------------

    def _setup_themes(self, wanted: str, theme_dirs: Sequence[Path]) -> None:
        result = load_themes(*theme_dirs)
        if DEFAULT_THEME not in result.themes:
            result.themes[DEFAULT_THEME] = fallback_theme()
        for theme in result.themes.values():
            self.register_theme(theme)
        self.plateau_theme_names = sorted(result.themes)
        for problem in result.problems:
            self.app_note("theme", problem, "warning")
        chosen, why = choose_theme(wanted, result.themes)
        if why:
            self.app_note("theme", why, "warning")
        self.theme = chosen

    def _setup_keymap(self) -> None:
        unknown = unknown_keymap_ids(self.config.keymap)
        if unknown:
            known = ", ".join(spec.id for spec in ACTIONS)
            self.app_note(
                "keymap", f"unknown binding id(s) in [keymap]: {', '.join(unknown)} "
                f"(known: {known})", "warning"
            )
        self.set_keymap(dict(self.config.keymap))

    def get_theme_variable_defaults(self) -> dict[str, str]:
        # Built-in Textual themes lack our variables; widgets' CSS must still parse under them.
        return dict(fallback_theme().variables)

    def app_note(self, source: str, message: str, level: str = "info") -> None:
        self.app_events.append(
            EventRecord(self.clock(), "console", source, level, message)  # type: ignore[arg-type]
        )
        if level != "info" and self.is_running:
            self.notify(message, title=source, severity=_severity(level), markup=False)

    async def on_mount(self) -> None:
        for record in self.app_events:
            if record.level != "info":
                self.notify(
                    record.message, title=record.source, severity=_severity(record.level),
                    markup=False,
                )
        if self.tick_seconds:
            self.set_interval(self.tick_seconds, self._tick)
        # Everything built at start-up lives for the whole run: move it out of the collector's
        # sight so full collections (tens of ms with a large log) stop stalling the UI; and
        # collect again if the command paused collection for its start-up.
        self.call_after_refresh(resume_gc)
        # Not DEFAULT_MODE: on Python 3.12+ Textual 8.2 composes the default mode's screen
        # before it is on the stack, and an Input in it then crashes the app.
        await self.switch_mode(self.start_screen)
        # The hosts' sessions (connect, GPU agent, log follower, server launch) start once
        # the first frame with the layout is on the terminal, not competing with it for the
        # CPU: their data fills the frame in.
        self.call_after_refresh(self._after_first_frame)

    def _after_first_frame(self) -> None:
        if self.is_headless:
            self._start_pumps()
            return
        # The terminal has the frame to draw, and needs the CPU for it: starting the
        # sessions at once (their imports, connects and agents, ~0.1 s of CPU) delayed the
        # frame on screen by about as much on a 2-core machine (tmux, bench_app_startup.py).
        self.set_timer(TERMINAL_GRACE_S, self._start_pumps)

    async def _start_session(self, session: Session) -> None:
        """Start `session` when one of CONNECTS_AT_ONCE places is free; the place is held
        while it connects (at most CONNECT_HOLD_S: a hung host holds one place, not all),
        and its events flow meanwhile. 64 hosts connecting at once made their first commands
        time out on a loaded console (and a bastion's sshd drops unauthenticated connections
        beyond 10 by default). A recording starts at once."""
        from console.session.service import HostSession

        if not isinstance(session, HostSession):
            await session.start()
            return
        await self._connect_gate.acquire()
        try:
            await session.start()
        except BaseException:
            self._connect_gate.release()
            raise
        self.run_worker(self._hold_place(session), group="connect-gate", exit_on_error=False,
                        description=f"connect place of {session.host.name}")

    async def _hold_place(self, session: Session) -> None:
        try:
            held = 0.0
            while session.state.connection == "connecting" and held < CONNECT_HOLD_S:
                await asyncio.sleep(0.05)
                held += 0.05
        finally:
            self._connect_gate.release()

    def _retry_failed(self) -> None:
        """Connect again to hosts whose connection failed (a timeout, a refusal), as the
        exporter does; not after a host-key refusal: that is the operator's decision. A
        recording is replayed once."""
        from console.session.service import HostSession

        for session in self.sessions.values():
            state = session.state
            if isinstance(session, HostSession) and state.connection == "failed" \
                    and state.host_key is None \
                    and "HOST KEY" not in state.connection_detail:
                self.run_worker(self._start_session(session), group="reconnect",
                                exit_on_error=False)

    def set_on_screen_hosts(self, hosts: Sequence[str]) -> None:
        """These hosts' figures are on screen: they sample at the full rate, the others at
        `ui.offscreen_interval_s` (HostSession.set_pace)."""
        self.on_screen_hosts = set(hosts)
        for name, session in self.sessions.items():
            session.set_pace(name in self.on_screen_hosts)

    def _start_pumps(self) -> None:
        if self.start_screen != "fleet":
            self.set_on_screen_hosts([self.active_host])
        self._connect_gate = asyncio.Semaphore(CONNECTS_AT_ONCE)
        self.set_interval(RETRY_FAILED_S, self._retry_failed)
        # The active and on-screen hosts connect first.
        order = sorted(self.host_names, key=lambda n: (n != self.active_host,
                                                       n not in self.on_screen_hosts))
        for session in (self.sessions[name] for name in order):
            self.run_worker(
                self._pump(session),
                name=f"pump:{session.host.name}",
                group="pumps",
                exit_on_error=False,
                description=f"events of host {session.host.name}",
            )

    async def _pump(self, session: Session) -> None:
        await self._start_session(session)
        name = session.host.name
        self._session_started(name)
        events_rev = session.state.revision.get("events", 0)
        async for event in session.events():
            aspects = _aspects_of(event)
            rev = session.state.revision.get("events", 0)
            if rev != events_rev:
                events_rev = rev
                aspects = (*aspects, "events")
            if name not in self.on_screen_hosts:
                aspects = tuple(a for a in aspects if a in _OFF_SCREEN_ASPECTS)
            if aspects:
                self.post_message(HostChanged(name, aspects))

    @on(Worker.StateChanged)
    def _worker_failed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            error = event.worker.error
            self.app_note(
                "worker", f"{event.worker.description or event.worker.name} failed: {error}",
                "error",
            )

    def on_gpu_panel_topology_requested(self) -> None:
        self.switch_mode("topology")

    # -- state ---------------------------------------------------------------------------------

    @property
    def active_session(self) -> Session:
        return self.sessions[self.active_host]

    @property
    def active_state(self) -> HostState:
        return self.active_session.state

    def header_info(self, state: HostState) -> HeaderInfo:
        return HeaderInfo(
            host=state.host,
            host_index=self.host_names.index(state.host),
            host_count=len(self.host_names),
            connection=state.connection,
            version=state.server_version,
            profile=state.profile or self.sessions[state.host].host.profile,
            server_state=state.server_state,
            uptime_s=state.uptime_seconds(),
            sweep=progress_line(state, self.ab_plans.get(state.host)),
            replay=self._replay_label(state.host),
            effective=header_text(state.effective),
        )

    def _replay_label(self, host: str) -> str:
        """"REPLAY of …" for a recording's session (console.session.replay), else ""."""
        return str(getattr(self.sessions[host], "replay_label", "") or "")

    def all_events(self) -> list[EventRecord]:
        records = list(self.app_events)
        for session in self.sessions.values():
            records.extend(session.state.events)
        return sorted(records, key=lambda r: r.at)

    def effective_keys(self) -> dict[str, str]:
        return effective_keys(dict(self.config.keymap))

    def on_host_changed(self, message: HostChanged) -> None:
        if not self.is_running:
            # Shutting down: Textual prunes the screens' widgets while they are still
            # attached, and live sessions keep reporting until they are closed.
            return
        state = self.sessions[message.host].state
        try:
            screen: Any = self.screen
        except ScreenStackError:
            return  # the app is exiting while live sessions still report
        if "events" in message.aspects:
            self._notify_new(state)
        if "host-key" in message.aspects:
            self.ask_host_key(message.host)
        self._render_screen(screen, message.host, message.aspects)
        if message.host == self.active_host and {"server", "sweep", "connection"} & set(
            message.aspects
        ):
            self.refresh_bindings()

    def _render_screen(self, screen: Any, host: str, aspects: tuple[str, ...] | None) -> None:
        """Show `host`'s news on the current screen (`aspects` None: its whole state)."""
        if host == self.active_host or getattr(screen, "shows_every_host", False):
            render = getattr(screen, "render_host", None)
            # A screen not mounted yet has no widgets to update: its on_mount renders the
            # whole state once they exist (a loaded machine delivered host events first).
            if callable(render) and screen.is_mounted:
                try:
                    render(self.active_state, aspects)
                except NoMatches:
                    # Only a screen being torn down may lack its widgets; else it is a bug.
                    if screen.is_attached and self.is_running:
                        raise

    def _session_started(self, host: str) -> None:
        """The screen was drawn before the session started: show what its start brought."""
        try:
            screen: Any = self.screen
        except ScreenStackError:
            return
        self._render_screen(screen, host, None)
        if host == self.active_host:
            self.refresh_bindings()

    def _notify_new(self, state: HostState) -> None:
        rev = state.revision.get("events", 0)
        seen = self._notified.get(state.host, 0)
        self._notified[state.host] = rev
        new = min(rev - seen, len(state.events))
        if new <= 0:
            return
        for record in list(state.events)[-new:]:
            if record.source == "host-key" and record.level == "warning":
                continue  # an unknown key: the question on screen says it
            if record.level in ("warning", "error"):
                self.notify(
                    record.message,
                    title=f"{record.host}: {record.source}",
                    severity=_severity(record.level),
                    markup=False,
                    timeout=8 if record.level == "error" else 5,
                )

    def _tick(self) -> None:
        try:
            screen: Any = self.screen
        except ScreenStackError:
            return
        # A screen pushed but not mounted yet has no header to refresh; its on_mount renders
        # the state (on a loaded machine the tick won that race: NoMatches: PlateauHeader).
        refresh = getattr(screen, "refresh_header", None)
        if callable(refresh) and screen.is_mounted:
            refresh(self.active_state)

    # -- availability (footer, palette) ---------------------------------------------------------

    def unavailable_reason(self, action_id: str) -> str | None:
        state = self.active_state
        if action_id in FLEET_HIDDEN and self.current_mode == "fleet":
            return "this is the fleet view: enter opens a host's dashboard"
        if action_id in REPLAY_REFUSED and self._replay_label(state.host):
            return "this is a replay: it runs nothing on a host"
        busy_server = state.server_state in ("starting", "stopping")
        ab_running = state.ab is not None and state.ab.running
        if action_id in ("restart", "sweep", "ab", "tune"):
            if getattr(self.tunes.get(state.host), "running", False):
                return "a tune is running"
            if ab_running:
                return "an A/B is running"
            if state.sweep.running:
                return "a sweep is running"
            if busy_server:
                return f"server is {state.server_state}"
            if state.connection != "connected":
                return f"host {state.connection}"
            if action_id == "ab" and len(self.config.profiles) < 2:
                return "A/B needs two profiles"
        elif action_id == "flags":
            if state.connection != "connected":
                return f"host {state.connection}"
        elif action_id == "cancel-sweep":
            if not state.sweep.running and not ab_running:
                return "no sweep or A/B is running"
        elif action_id in ("next-host", "prev-host", "hosts") and len(self.host_names) < 2:
            return "only one host configured"
        return None

    def footer_state(self, action_id: str) -> str:
        """How the footer shows an action now: "enabled", "disabled" (relevant, not now: greyed,
        and its key says why) or "hidden" (irrelevant now; its key still says why)."""
        if self.unavailable_reason(action_id) is None:
            return "enabled"
        hidden = HIDDEN_WHEN_UNAVAILABLE | (FLEET_HIDDEN if self.current_mode == "fleet"
                                            else frozenset())
        return "hidden" if action_id in hidden else "disabled"

    def run_action_id(self, action_id: str) -> None:
        self.call_later(self.run_action, BY_ID[action_id].action)

    # -- actions ----------------------------------------------------------------------------------

    def _refuse(self, action_id: str) -> bool:
        why = self.unavailable_reason(action_id)
        if why is None:
            return False
        self.notify(f"{BY_ID[action_id].description}: {why}", severity="warning", markup=False)
        return True

    def action_restart(self) -> None:
        session = self.active_session
        self.request_restart(session, session.state.profile or session.host.profile)

    def request_restart(
        self, session: Session, profile: str | None, command: str | None = None
    ) -> None:
        """The one restart path (the `r` key and the flags editor): refuse while a sweep or
        A/B holds the host, else confirm, then hand it to the session."""
        if self._refuse("restart"):
            return
        question = f"Restart the server on {session.host.name} with profile {profile or '(none)'}?"
        if command:
            question += f"\n\n{command}"

        def confirmed(ok: bool | None) -> None:
            if ok:
                self._send(session, "restart", profile)

        from console.app.screens.modals import ConfirmScreen

        self.push_screen(ConfirmScreen(question), confirmed)

    # -- GPU processes ---------------------------------------------------------------------------

    def action_gpu_processes(self) -> None:
        """List the host's GPU processes; one of the operator's own can be sent SIGTERM after
        a confirmation. Another user's are listed but not choosable; a simulated host (the
        demo) refuses outright."""
        from console.app.screens.gpu_processes import ProcessPicker
        from console.app.screens.modals import ConfirmScreen
        from console.gpu.processes import process_rows

        if self._refuse("gpu-processes"):
            return
        session = self.active_session
        state = session.state
        simulated = bool(session.host.sim_state_file)
        rows = process_rows(state.gpu_sample, state.gpu_header, simulated=simulated)
        description = BY_ID["gpu-processes"].description
        if simulated:
            self.notify(f"{description}: the demo never signals processes", markup=False,
                        severity="warning")
            return
        if not rows:
            self.notify(f"{description}: no GPU processes on {session.host.name}", markup=False)
            return

        def confirmed(row: GpuProcessRow, ok: bool | None) -> None:
            if ok:
                self.run_worker(self._signal_gpu_process(session, row), group="commands",
                                exit_on_error=False,
                                description=f"signal pid {row.process.pid} on {session.host.name}")

        def picked(row: GpuProcessRow | None) -> None:
            if row is None or row.refusal is not None:
                return
            question = (f"Send SIGTERM to pid {row.process.pid} on {session.host.name}?\n\n"
                        f"{row.label}")
            self.push_screen(ConfirmScreen(question), lambda ok: confirmed(row, ok))

        self.push_screen(ProcessPicker(session.host.name, rows), picked)

    async def _signal_gpu_process(self, session: Session, row: GpuProcessRow) -> None:
        from console.gpu.processes import send_signal

        # The host's own connection (HostSession.transport): the signal goes as the operator.
        transport = getattr(session, "transport", None)
        if not isinstance(transport, Transport):
            self.app_note("gpu", f"{session.host.name}: not connected; nothing sent", "warning")
            return
        try:
            outcome = await send_signal(transport, row)
        except PlateauError as exc:
            self.app_note("gpu", str(exc), "error")
            return
        self.app_note("gpu", outcome, "warning")  # "warning": shown, and kept in the log

    # -- host keys ------------------------------------------------------------------------------

    def ask_host_key(self, name: str) -> None:
        """Ask about `name`'s pending unknown host key (once at a time per host); the answer
        goes to the session, which records the decision in the host's event log."""
        session = self.sessions.get(name)
        key = session.state.host_key if session is not None else None
        if session is None or key is None:
            return
        from console.app.screens.modals import HostKeyScreen

        if any(isinstance(s, HostKeyScreen) and s.key.host == name for s in self.screen_stack):
            return

        def decided(accept: bool | None) -> None:
            if session.state.host_key is not key:  # connected meanwhile, or a newer key
                self.call_later(self.ask_host_key, name)
                return
            work: Coroutine[Any, Any, bool | None]
            if accept:
                self.post_message(CommandSent(name, "accept-host-key", key.fingerprint))
                work = session.accept_host_key(key.fingerprint)
            else:
                self.post_message(CommandSent(name, "refuse-host-key", key.fingerprint))
                work = session.refuse_host_key()
            self.run_worker(work, group="commands", exit_on_error=False,
                            description=f"host key decision on {name}")

        self.push_screen(HostKeyScreen(key), decided)

    def action_sweep(self) -> None:
        if not self._refuse("sweep"):
            self._send(self.active_session, "sweep", "default")

    def action_cancel_sweep(self) -> None:
        if not self._refuse("cancel-sweep"):
            self._send(self.active_session, "cancel-sweep", None)

    def _send(
        self, session: Session, command: str, argument: str | None,
        ab: ABRequest | None = None,
    ) -> None:
        self.post_message(CommandSent(session.host.name, command, argument))
        if command == "restart":
            work = session.restart(argument)
        elif command == "sweep":
            work = session.start_sweep(argument or "default")
        elif command == "ab" and ab is not None:
            work = session.start_ab(ab)
        else:
            work = session.cancel_sweep()
        self.run_worker(
            work, group="commands", exit_on_error=False,
            description=f"{command} on {session.host.name}",
        )

    # -- flags editor ---------------------------------------------------------------------------

    def action_flags(self) -> None:
        if self._refuse("flags"):
            return
        session = self.active_session
        name = session.state.profile or session.host.profile
        if name is None or name not in self.config.profiles:
            self.app_note("flags", f"no known profile to edit on {session.host.name} "
                          f"(running: {name or 'none'})", "warning")
            return
        self.notify(f"reading {name}'s flags from {session.host.name}'s --help…",
                    markup=False, timeout=3)
        self.run_worker(
            self._edit_flags(session, name), group="flags", exclusive=True,
            exit_on_error=False, description=f"flags editor on {session.host.name}",
        )

    async def _edit_flags(self, session: Session, name: str) -> None:
        from console.app.screens.modals import ConfirmScreen
        from widgets.flags_editor import FlagsEditor

        try:
            schema = await session.flag_schema(name)
            record = await session.server_record()
        except Exception as exc:
            self.app_note("flags", f"cannot read the flags of {name} on {session.host.name}: "
                          f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
                          "error")
            return
        editor = FlagsEditor(
            name, self.config.profiles[name], schema,
            running_flags=adapters.running_flags(record, schema),
            existing_names=frozenset(self.config.profiles),
            existing=dict(self.config.profiles),
            restart_blocked=self.unavailable_reason("restart"),
        )
        result = await self.push_screen_wait(editor)
        if result is None:
            return
        if result.action == "save":
            await self._save_edited(result)
            return
        # Restart with these flags: one confirmation that shows what will run.
        if self._refuse("restart"):
            return
        command = display_command(result.profile)
        validated = f"validated against {session.host.name}'s --help" + (
            f" (sglang {schema.version})" if schema.version else "")
        lines = [f"Restart the server on {session.host.name} with these flags?", "", command,
                 "", *(change_lines(result) or ["no flag changes against the running server"]),
                 *result.warnings, validated]
        if not await self.push_screen_wait(ConfirmScreen("\n".join(lines))):
            self.app_note("flags", f"edited flags of {name} discarded")
            return
        if self.add_profile(result.name, result.profile, persist=False):
            self._send(session, "restart", result.name)

    async def _save_edited(self, result: FlagsEditorResult) -> None:
        """Save as profile; replacing an existing one asks first."""
        from console.app.screens.modals import ConfirmScreen

        if result.name in self.config.profiles:
            where = ("saved in profiles.d" if (self.profiles_dir / f"{result.name}.toml").exists()
                     else "from the config file, whose copy wins at the next start")
            question = f"A profile called {result.name} exists ({where}). Replace it?"
            if not await self.push_screen_wait(ConfirmScreen(question)):
                self.app_note("flags", f"profile {result.name} kept as it was")
                return
        self.add_profile(result.name, result.profile, persist=True)

    def _saveable(self, profile: ServerProfile) -> ServerProfile:
        """What the operator chose, without what belongs to this run of the demo: its
        temporary GPU-state file and the free port it picked (issue 26.10)."""
        host = self.active_session.host
        if not host.sim_state_file or self.loaded.path is not None:
            return profile
        flags = {k: v for k, v in profile.flags.items() if v != host.sim_state_file}
        return profile.model_copy(update={"flags": flags,
                                          "port": ServerProfile.model_fields["port"].default})

    def add_profile(self, name: str, profile: ServerProfile, *, persist: bool) -> bool:
        """Add a profile to every session's list for this run; with `persist`, also write
        `<config dir>/profiles.d/<name>.toml` (never secrets)."""
        if persist:
            from console.session.profiles import ProfileSaveError, save_profile

            try:
                path, skipped = save_profile(self.profiles_dir, name, self._saveable(profile))
            except ProfileSaveError as exc:
                self.app_note("flags", f"profile {name} not saved: {exc}", "error")
                return False
            self.app_note("flags", f"profile {name} saved to {path}")
            self.notify(f"profile {name} saved to {path}", markup=False, timeout=4)
            if skipped:
                self.app_note("flags", f"profile {name}: env {', '.join(skipped)} not written "
                              "(looks secret; set it in the config file)", "warning")
        else:
            self.app_note("flags", f"profile {name} kept for this run (not saved)")
        profiles = {**self.config.profiles, name: profile}
        self.config = self.config.model_copy(update={"profiles": profiles})
        self.loaded = dataclasses.replace(self.loaded, config=self.config)
        for session in self.sessions.values():
            session.set_profiles(profiles)
        return True

    # -- A/B ------------------------------------------------------------------------------------

    def action_ab(self) -> None:
        if self._refuse("ab"):
            return
        session = self.active_session
        names = list(self.config.profiles)
        current = session.state.profile or session.host.profile
        a = current if current in names else names[0]
        b = next(n for n in names if n != a)
        self._open_ab_picker(session, a, b)

    def _open_ab_picker(
        self, session: Session, a: str | None, b: str | None, plan: CauseAB | None = None
    ) -> None:
        """The A/B dialog (profiles, preset, concurrencies, repeats, interleave, estimate);
        with a cause's `plan`, its levels and the diagnosed run's workload, and why."""
        names_of_presets = list(self.config.sweeps) or ["default"]
        if "quick" in names_of_presets:  # the demo's fast preset first
            names_of_presets.insert(0, names_of_presets.pop(names_of_presets.index("quick")))
        from console.app import views_data
        from console.app.screens.modals import ABPicker
        from console.bench.abplan import (  # imports the engines
            model_steps,
            restart_guess,
            step_durations,
        )

        presets = {name: self.config.sweep(name) for name in names_of_presets}
        stored = views_data.step_times(self.store_path, session.host.name)

        def picked(choice: ABRequest | None) -> None:
            if choice is not None and not self._refuse("ab"):
                what = f"{choice.a} vs {choice.b} ({choice.preset}, x{choice.repeats}" + (
                    ", interleaved)" if choice.interleave else ")")
                guess = picker.last_estimate
                if guess is not None:  # the header counts steps and time left against it
                    self.ab_plans[session.host.name] = ABPlan(
                        guess.seconds, guess.steps, session.state.clock())
                self._send(session, "ab", what, ab=choice)

        picker = ABPicker(
                list(self.config.profiles), presets, a, b,
                restart_s=lambda name: restart_guess(self.config.profiles.get(name)),
                measured=lambda spec: step_durations(spec, stored),
                modelled=lambda spec, a_name, b_name: model_steps(
                    spec, self.config.profiles.get(a_name), self.config.profiles.get(b_name)),
                **_cause_ab_args(plan),
        )
        self.push_screen(picker, picked)

    # -- Why: a diagnosis suggestion as profile B of an A/B ------------------------------------

    def open_suggestion_ab(
        self, cause: Any, run_profile: str | None, plan: CauseAB | None = None
    ) -> None:
        """B = the run's profile (else the host's) with the cause's suggested flags/env,
        validated as the flags editor validates, then the A/B picker with A and B chosen."""
        from widgets.why_view import can_ab

        if not can_ab(cause):
            from console.diagnose.diagnose import suggestion_text

            self.app_note("why", f"{cause.id}: {suggestion_text(cause)} (a sweep or host "
                          "setting, not a profile change: no A/B)", "warning")
            return
        if self._refuse("ab"):
            return
        session = self.active_session
        current = session.state.profile or session.host.profile
        base = run_profile if run_profile in self.config.profiles else current
        if base is None or base not in self.config.profiles:
            self.app_note("why", f"no known profile to change on {session.host.name}", "warning")
            return
        self.run_worker(self._suggestion_ab(session, base, cause, plan), group="flags",
                        exclusive=True, exit_on_error=False,
                        description=f"A/B of {cause.id} on {session.host.name}")

    async def _suggestion_ab(
        self, session: Session, base: str, cause: Any, plan: CauseAB | None
    ) -> None:
        from console.server.profile_edit import apply_changes

        try:
            schema = await session.flag_schema(base)
        except Exception as exc:
            self.app_note("why", f"cannot read the flags of {base} on {session.host.name}: "
                          f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
                          "error")
            return
        try:
            profile, report = apply_changes(self.config.profiles[base], cause.suggest.flags,
                                            cause.suggest.env, schema)
        except ValueError as exc:
            self.app_note("why", f"{cause.id}: {str(exc).splitlines()[0]}", "error")
            return
        if not report.ok:
            self.app_note("why", f"{cause.id}: the suggested profile does not validate: "
                          + "; ".join(str(i) for i in report.errors), "error")
            return
        name = f"{base}+{cause.id}"
        if not self.add_profile(name, profile, persist=False):
            return
        self._open_ab_picker(session, base, name, plan)

    def action_show(self, name: str) -> None:
        if name in SCREENS:
            self.switch_mode(name)

    async def action_toggle(self, panel: str) -> None:  # DOMNode.action_toggle is async
        screen = self.get_screen_dashboard()
        if screen is None:
            return
        if screen.toggle_panel(panel):
            self.hidden_panels.discard(panel)
        else:
            self.hidden_panels.add(panel)

    def action_gpu(self, method: str) -> None:
        """`m` / `v`: the GPU panel's own actions, whichever panel has the focus."""
        screen = self.get_screen_dashboard()
        action = getattr(screen.gpu_view, f"action_{method}", None) if screen else None
        if not callable(action):
            spec = next(s for s in ACTIONS if s.action == f"gpu('{method}')")
            self.notify(f"{spec.description}: the GPU panel is on the dashboard (d)",
                        severity="warning", markup=False)
            return
        action()

    async def action_chart_mode(self) -> None:
        """`p`: the sweep chart's Pareto view and back; the frontier spans the host's runs."""
        screen = self.get_screen_dashboard()
        chart = screen.sweep_view if screen is not None else None
        if chart is None:
            self.notify("Pareto: the sweep chart is on the dashboard (d)", severity="warning",
                        markup=False)
            return
        if chart.cycle_mode() == "pareto":
            from console.app import views_data  # with the first use, as the A/B picker does

            chart.set_history(await asyncio.to_thread(
                views_data.pareto_history, self.store_path, self.active_host))

    def action_maximize(self) -> None:
        screen = self.get_screen_dashboard()
        if screen is not None:
            screen.toggle_maximize()

    def action_filter(self) -> None:
        screen = self.get_screen_dashboard()
        if screen is None:
            self.switch_mode("dashboard")
            return
        screen.focus_log()

    def get_screen_dashboard(self) -> DashboardScreen | None:
        screen = self.screen
        return screen if isinstance(screen, DashboardScreen) else None

    def action_next_host(self, step: int) -> None:
        if self._refuse("next-host" if step > 0 else "prev-host"):
            return
        index = self.host_names.index(self.active_host)
        self.switch_host(self.host_names[(index + step) % len(self.host_names)])

    def action_pick_host(self) -> None:
        if self._refuse("hosts"):
            return
        from console.app.screens.modals import HostPicker

        hosts = [(n, self.sessions[n].state.connection) for n in self.host_names]

        def picked(name: str | None) -> None:
            if name:
                self.switch_host(name)

        self.push_screen(HostPicker(hosts, self.active_host), picked)

    def switch_host(self, name: str) -> None:
        if name not in self.sessions or name == self.active_host:
            return
        self.active_host = name
        if self.current_mode != "fleet":
            self.set_on_screen_hosts([name])
        render = getattr(self.screen, "render_host", None)
        if callable(render):
            render(self.active_state, None)
        self.refresh_bindings()
        self.post_message(ActiveHostChanged(name))

    def use_theme(self, name: str) -> None:
        self.theme = name

    def action_cycle_theme(self) -> None:
        names = self.plateau_theme_names
        index = names.index(self.theme) if self.theme in names else -1
        self.theme = names[(index + 1) % len(names)]
        self.notify(f"theme: {self.theme}", markup=False, timeout=2)

    def action_help(self) -> None:
        from console.app.screens.modals import HelpScreen

        keys = self.effective_keys()
        rows = [HelpRow(spec.id, keys[spec.id], spec.help) for spec in ACTIONS]
        ui = self.config.ui
        self.push_screen(
            HelpScreen(
                rows, Thresholds(ui.gpu_load_mid, ui.gpu_load_high, ui.gpu_interval_s,
                                 ui.log_max_lines),
                sections=[("Log (when it has the focus: tab moves it, / goes there)",
                           widget_help_rows(LogView.BINDINGS))],
            )
        )


def _cause_ab_args(plan: CauseAB | None) -> dict[str, Any]:
    """The A/B dialog's arguments for a cause's A/B: the run's workload at the cause's levels
    (else the preset's levels at the cause's levels), and the sentence that says so."""
    if plan is None:
        return {}
    if plan.workload is not None:
        workload = plan.workload.model_copy(update={"concurrency": list(plan.levels)})
        return {"run_workload": (plan.preset_name, workload), "note": plan.note}
    return {"levels": plan.levels, "note": plan.note}


def widget_help_rows(bindings: Sequence[Any]) -> list[HelpRow]:
    """A widget's own keys for `?` (its id, or its action when it has none)."""
    return [HelpRow(b.id or b.action, b.key, b.tooltip or b.description) for b in bindings]


def display_command(profile: ServerProfile) -> str:
    """The effective command line as it will run (env first, secrets redacted)."""
    return adapters.display_command(profile)


def change_lines(result: FlagsEditorResult) -> list[str]:
    out = []
    for change in result.changes:
        if change.kind == "added":
            out.append(f"+ --{change.flag} {change.after}")
        elif change.kind == "removed":
            out.append(f"- --{change.flag} {change.before}")
        else:
            out.append(f"~ --{change.flag} {change.before} -> {change.after}")
    return out


def _aspects_of(event: SessionEvent) -> tuple[str, ...]:
    return _ASPECTS.get(type(event), ())


def _severity(level: str) -> Any:
    return {"error": "error", "warning": "warning"}.get(level, "information")


def _satisfies_the_screen_contract(app: PlateauApp) -> ConsoleApp:
    """Never called: mypy checks here that PlateauApp is what screens rely on."""
    return app
