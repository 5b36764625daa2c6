"""PlateauApp: the Textual console. Sessions (one per host) do the work; the app renders.

Data flow: a HostSession emits typed events, already folded into its HostState; a pump worker
per host turns each into a coalescing `HostChanged` message (console.app.pumps); the handler
redraws the aspects that changed on the visible screen, in place (console.app.host_news).
Nothing here waits on the network: commands (restart, sweep) are handed to the session in
workers (console.app.intents).

This class wires the parts: each concern is a mixin of its own module (console.app.base says
why they subclass Textual's App); what stays here is the start-up (themes, keymap, the first
screen) and the header.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import on
from textual.actions import ActionParseResult
from textual.app import App
from textual.binding import BindingType
from textual.dom import DOMNode
from textual.worker import Worker, WorkerState

from console.app.ab_flow import ABFlow
from console.app.base import ConsoleBase, severity
from console.app.bindings import ACTIONS, app_bindings, unknown_keymap_ids
from console.app.boot import Booted, BootPlan
from console.app.contract import ConsoleApp
from console.app.flags_flow import FlagsFlow
from console.app.gpu_actions import GpuProcessActions
from console.app.intents import HostIntents
from console.app.modes import MODES, SCREENS
from console.app.palette import PaletteProvider
from console.app.progress import progress_line
from console.app.pumps import SessionPumps
from console.app.stylesheet import ReparsedInPlace
from console.app.theming import (
    DEFAULT_THEME,
    THEME_DIR,
    choose_theme,
    fallback_theme,
    load_themes,
)
from console.app.view_actions import ViewActions
from console.config import LoadedConfig
from console.engines import engine_named, engine_of_profile
from console.gc_policy import gc_paused, pace_gc, resume_gc
from console.session.protocol import Session
from console.session.state import Clock, EventRecord, HostState, current_profile, utc_now
from console.sglang.resolved import header_text
from widgets.header import HeaderInfo

if TYPE_CHECKING:
    from console.config_models import ServerProfile


__all__ = ["SCREENS", "PlateauApp"]

# What a key does before the boot lands, rather than once it has: quit (q, ctrl+q), and
# ctrl+c's hint of how to quit.
_ACTS_BEFORE_BOOT = frozenset({"quit", "app.quit", "help_quit", "app.help_quit"})


class PlateauApp(
    SessionPumps, HostIntents, FlagsFlow, ABFlow, GpuProcessActions, ViewActions, ConsoleBase
):
    TITLE = "plateau"
    CSS_PATH = str(THEME_DIR / "app.tcss")
    BINDINGS: ClassVar[list[BindingType]] = [*app_bindings()]
    COMMANDS = App.COMMANDS | {PaletteProvider}
    MODES: ClassVar = dict(MODES)

    def __init__(
        self,
        loaded: LoadedConfig | None,
        sessions: Sequence[Session] = (),
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
        boot: BootPlan | None = None,
    ) -> None:
        """`loaded` and `sessions`: a console ready at once; or `loaded` None and a `boot`:
        a console that draws `boot.first`, then boots (console.app.boot)."""
        if (loaded is None) == (boot is None):
            raise ValueError("give the console its config and sessions, or a boot plan")
        super().__init__(loaded, sessions, active_host=active_host, clock=clock,
                         store_path=store_path, start_screen=start_screen,
                         tick_seconds=tick_seconds, profiles_dir=profiles_dir,
                         first_frame=boot.first if boot is not None else None)
        self._boot = boot
        self.boot_error: BaseException | None = None
        """Why the boot failed (the console then ended); None: it did not."""
        self._held_actions: list[tuple[str, DOMNode | None, Mapping[str, DOMNode] | None]] = []
        pace_gc()  # the console watches hosts for hours: see console/gc_policy.py
        self.stylesheet = ReparsedInPlace(variables=self.get_css_variables())
        for note in startup_notes:
            self.app_note("profiles", note, "warning")
        configured = self.config.theme if self.booted else self._first.theme
        self._setup_themes(theme or configured, theme_dirs)
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
        keymap = dict(self.keymap)
        unknown = unknown_keymap_ids(keymap)
        if unknown:
            known = ", ".join(spec.id for spec in ACTIONS)
            self.app_note(
                "keymap", f"unknown binding id(s) in [keymap]: {', '.join(unknown)} "
                f"(known: {known})", "warning"
            )
        self.set_keymap(keymap)

    def get_theme_variable_defaults(self) -> dict[str, str]:
        # Built-in Textual themes lack our variables; widgets' CSS must still parse under them.
        return dict(fallback_theme().variables)

    async def on_mount(self) -> None:
        for record in self.app_events:
            if record.level != "info":
                self.notify(
                    record.message, title=record.source, severity=severity(record.level),
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
        # CPU: their data fills the frame in (console.app.pumps).
        self.call_after_refresh(self._after_first_frame)

    # -- the boot (console.app.boot) ----------------------------------------------------------

    def _start_sessions(self) -> None:
        """The boot first, if the console has one to run; then the sessions (pumps)."""
        if self._boot is None or self.booted:
            self._start_pumps()
            return
        self.run_worker(self._run_boot(self._boot), name="boot", group="boot",
                        exit_on_error=False, description="the console's start-up")

    async def _run_boot(self, plan: BootPlan) -> None:
        # The boot is start-up too: its modules, classes and config live for the whole run,
        # so it runs without the collector and ends frozen out of its sight (gc_policy).
        with gc_paused():
            try:
                booted = await plan.boot()
            except Exception as exc:  # the command says it, once the terminal is restored
                self.boot_error = exc
                self.exit(return_code=1)
                return
            self._land(booted)
        self._start_pumps()

    def _land(self, booted: Booted) -> None:
        """The boot's config and sessions replace the first frame's stand-ins; the screen is
        drawn again from them, and the keys held meanwhile act."""
        self.store_path = booted.store_path or self.store_path
        self._take_config(booted.loaded, booted.sessions, booted.active_host, booted.profiles_dir)
        for note in booted.startup_notes:
            self.app_note("profiles", note, "warning")
        self._render_screen(self.screen, self.active_host, None)
        self.refresh_bindings()
        held, self._held_actions = self._held_actions, []
        for action, namespace, namespaces in held:
            self.call_later(self.run_action, action, namespace, namespaces)

    async def run_action(
        self, action: str | ActionParseResult, default_namespace: DOMNode | None = None,
        namespaces: Mapping[str, DOMNode] | None = None,
    ) -> bool:
        # Before the boot lands (a fraction of a second) a key is held, not lost or refused:
        # it acts once the config and sessions are here. Quit acts at once.
        if self.booted or not isinstance(action, str) or action in _ACTS_BEFORE_BOOT:
            return await super().run_action(action, default_namespace, namespaces)
        self._held_actions.append((action, default_namespace, namespaces))
        return True

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

    # -- what every screen shows -------------------------------------------------------------

    def header_info(self, state: HostState) -> HeaderInfo:
        if not self.booted:
            return self._first_header(state)
        profile = current_profile(state, self.sessions[state.host].host)
        launch = self.config.profiles.get(profile) if profile else None
        return HeaderInfo(
            host=state.host,
            host_index=self.host_names.index(state.host),
            host_count=len(self.host_names),
            connection=state.connection,
            version=state.server_version,
            engine=engine_of_profile(launch).title,
            profile=profile,
            profile_edited=profile is not None and (
                self.profile_edited(profile) or runs_other_flags(launch, state.server_argv)),
            server_state=state.server_state,
            uptime_s=state.uptime_seconds(),
            sweep=progress_line(state, self.ab_plans.get(state.host)),
            replay=self._replay_label(state.host),
            effective=header_text(state.effective),
        )

    def _first_header(self, state: HostState) -> HeaderInfo:
        """The header before the boot: the host, its configured profile and engine."""
        first = self._first
        profile = first.profile if state.host == first.active_host else None
        return HeaderInfo(
            host=state.host, host_index=self.host_names.index(state.host),
            host_count=len(self.host_names), connection=state.connection,
            engine=engine_named(first.engine).title, profile=profile,
            server_state=state.server_state,
        )

    def all_events(self) -> list[EventRecord]:
        records = list(self.app_events)
        for session in self.sessions.values():
            records.extend(session.state.events)
        return sorted(records, key=lambda r: r.at)


def _satisfies_the_screen_contract(app: PlateauApp) -> ConsoleApp:
    """Never called: mypy checks here that PlateauApp is what screens rely on."""
    return app


def runs_other_flags(profile: ServerProfile | None, argv: tuple[str, ...] | None) -> bool:
    """The running server, named after `profile`, was launched with other flags (a restart
    into other flags kept under the old name, made here, by another console or the CLI):
    the header then reads "(edited)", not the old name alone (issue 41.7)."""
    if profile is None or argv is None:
        return False
    from console.server.records import launched_other_flags

    return launched_other_flags(profile.argv(), argv)

