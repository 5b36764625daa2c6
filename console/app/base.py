"""What every part of the console app shares: its hosts and their sessions, the config with
this run's profile set, the app's own notes, and the one way a host's news reaches the screen.

PlateauApp (console/app/app.py) is this class plus one mixin per concern (pumps, host_news,
hosts, host_keys, intents, flags_flow, ab_flow, gpu_actions, view_actions). Each mixin
subclasses this one, and so Textual's App: Textual's metaclass collects a class's `@on`
handlers only for subclasses of its MessagePump, and dispatch walks the app's MRO, so a
handler on a plain (object) mixin would never run.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Coroutine, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.app import App
from textual.css.query import NoMatches
from textual.screen import Screen

from console.app.boot import FirstFrame, UiView
from console.app.contract import HostView
from console.app.messages import HostIntent
from console.app.modes import SCREENS
from console.app.progress import ABPlan
from console.app.screens.dashboard import DashboardScreen
from console.config import LoadedConfig
from console.session.profile_set import ProfileSet
from console.session.protocol import Session
from console.session.state import Clock, EventRecord, HostState

if TYPE_CHECKING:
    from console.config_models import PlateauConfig, ServerProfile
    from console.session.tune_control import TuneControl


class ConsoleBase(App[int]):
    """The console's state; PlateauApp adds its themes, keys and start-up."""

    _connect_gate: asyncio.Semaphore
    """CONNECTS_AT_ONCE places for connecting sessions (console.app.pumps)."""
    plateau_theme_names: list[str]
    """The themes `ctrl+t` cycles (PlateauApp._setup_themes)."""
    _loaded: LoadedConfig
    profiles_dir: Path
    """Where the flags editor saves profiles."""
    _first: FirstFrame
    _pending: dict[str, HostState]

    def __init__(
        self,
        loaded: LoadedConfig | None,
        sessions: Sequence[Session],
        *,
        active_host: str | None,
        clock: Clock,
        store_path: Path | None,
        start_screen: str,
        tick_seconds: float | None,
        profiles_dir: Path | None,
        first_frame: FirstFrame | None = None,
    ) -> None:
        """`loaded` None: a console that boots (console.app.boot): `first_frame` is what it
        draws until `_take_config` gives it its config and sessions."""
        super().__init__()
        self.clock = clock
        self.store_path = store_path
        self.tick_seconds = tick_seconds
        if start_screen not in SCREENS:
            raise ValueError(f"unknown screen {start_screen!r} (have: {', '.join(SCREENS)})")
        self.start_screen = start_screen
        self.hidden_panels: set[str] = set()
        # Run ids marked in the history screen (m); two marked runs are what compare shows.
        self.marked_runs: list[int] = []
        self.ab_plans: dict[str, ABPlan] = {}  # host -> the plan of the A/B it runs
        self.tunes: dict[str, TuneControl] = {}  # host -> its tune (the Tune view)
        self.tune_bench_for: Any = None  # (session, store) -> TuneBench; None: the session's
        self.app_events: deque[EventRecord] = deque(maxlen=500)
        self._notified: dict[str, int] = {}
        # (host, source) -> the retried failure last shown as a toast: said once, not at every
        # retry (a failing GPU agent stacked a toast a second over half the screen).
        self._retry_said: dict[tuple[str, str], str] = {}
        self._loaded_view: LoadedConfig | None = None
        self.booted = False
        """The config and sessions are here (at once, or once a boot has landed)."""
        self.sessions: dict[str, Session] = {}
        if loaded is not None:
            self._take_config(loaded, sessions, active_host, profiles_dir)
            return
        if first_frame is None or not first_frame.hosts:
            raise ValueError("the console needs its config and sessions, or a first frame")
        if profiles_dir is not None:  # not silently dropped: the boot's Booted carries it
            raise ValueError("a console that boots takes its profiles dir from its boot")
        self._first = first_frame
        # Until the boot: the hosts' states as their sessions start them (connecting).
        self._pending = {name: HostState(name, clock=clock) for name in first_frame.hosts}
        self.host_names = list(first_frame.hosts)
        active = first_frame.active_host
        self.active_host = active if active in self._pending else self.host_names[0]
        self.on_screen_hosts: set[str] = set(self.host_names)
        # One profile set for this run, shared with every session (the flags editor adds).
        self.profiles = ProfileSet({})
        # The profiles as saved (the config file, profiles.d, saves since): what "edited" means.
        self._saved_profiles: dict[str, ServerProfile] = {}

    def _take_config(
        self, loaded: LoadedConfig, sessions: Sequence[Session], active_host: str | None,
        profiles_dir: Path | None,
    ) -> None:
        """The console's config and its hosts' sessions (from its constructor, or its boot)."""
        if not sessions:
            raise ValueError("the console needs at least one host session")
        self._loaded = loaded
        self.profiles = ProfileSet(loaded.config.profiles)
        self._saved_profiles = dict(loaded.config.profiles)
        self.sessions = {s.host.name: s for s in sessions}
        self.host_names = list(self.sessions)
        for session in self.sessions.values():
            session.share_profiles(self.profiles)
        self.active_host = active_host if active_host in self.sessions else self.host_names[0]
        self.on_screen_hosts = set(self.sessions)
        if profiles_dir is None:  # (profiles.py validates saved profiles: pydantic)
            from console.session.profiles import profiles_dir as default_profiles_dir

            profiles_dir = default_profiles_dir(loaded)
        self.profiles_dir = profiles_dir
        self.booted = True

    # -- config and profiles ---------------------------------------------------------------------

    @property
    def loaded(self) -> LoadedConfig:
        """The config as loaded, with this run's profile set (the flags editor adds to it)."""
        base = self._booted_config()
        config = self.profiles.applied(base.config)
        if config is base.config:
            return base
        if self._loaded_view is None or self._loaded_view.config is not config:
            self._loaded_view = LoadedConfig(config, base.path, base.text)
        return self._loaded_view

    @property
    def config(self) -> PlateauConfig:
        return self.profiles.applied(self._booted_config().config)

    def _booted_config(self) -> LoadedConfig:
        if not self.booted:  # what the first frame needs is in its FirstFrame (ui, keymap)
            raise RuntimeError("the console's config is read before its boot landed")
        return self._loaded

    @property
    def ui(self) -> UiView:
        """The [ui] values the screens are built with (before the boot: the first frame's)."""
        return self.config.ui if self.booted else self._first.ui

    @property
    def keymap(self) -> Mapping[str, str]:
        """The config's [keymap] (before the boot: the first frame's)."""
        return self.config.keymap if self.booted else self._first.keymap

    def add_profile(self, name: str, profile: ServerProfile, *, persist: bool) -> bool:
        """Add a profile to the run's profile set (every session's); with `persist`, also write
        `<config dir>/profiles.d/<name>.toml` (never secrets)."""
        if persist:
            return self.save_profile(name, profile) is None
        self.app_note("flags", f"profile {name} kept for this run (not saved)")
        self._add_to_run(name, profile, saved=False)
        return True

    def save_profile(self, name: str, profile: ServerProfile) -> str | None:
        """Write `profiles.d/<name>.toml` and add the profile to the run; returns why the
        save failed (said in the event log too), else None."""
        from console.session.profiles import ProfileSaveError, save_profile

        try:
            path, skipped = save_profile(self.profiles_dir, name, self._saveable(profile))
        except ProfileSaveError as exc:
            self.app_note("flags", f"profile {name} not saved: {exc}", "error")
            return str(exc)
        self.app_note("flags", f"profile {name} saved to {path}")
        self.notify(f"profile {name} saved to {path}", markup=False, timeout=4)
        if skipped:
            self.app_note("flags", f"profile {name}: env {', '.join(skipped)} not written "
                          "(looks secret; set it in the config file)", "warning")
        self._add_to_run(name, profile, saved=True)
        return None

    def _add_to_run(self, name: str, profile: ServerProfile, *, saved: bool) -> None:
        if saved:
            self._saved_profiles[name] = profile
        self.profiles.add(name, profile)  # every session holds this set

    def profile_edited(self, name: str) -> bool:
        """This run's profile `name` runs other flags than the saved profile of that name (a
        restart kept for this run under the old name): the header says "(edited)" rather than
        the old name alone (issue 41.7)."""
        saved = self._saved_profiles.get(name)
        return saved is not None and self.config.profiles.get(name, saved) != saved

    def _saveable(self, profile: ServerProfile) -> ServerProfile:
        """What the operator chose, without what belongs to this run of the demo: its
        temporary GPU-state file and the free port it picked (issue 26.10)."""
        host = self.active_session.host
        if not host.sim_state_file or self.loaded.path is not None:
            return profile
        flags = {k: v for k, v in profile.flags.items() if v != host.sim_state_file}
        return profile.model_copy(update={"flags": flags,
                                          "port": type(profile).model_fields["port"].default})

    # -- the app's own notes -------------------------------------------------------------------

    def app_note(self, source: str, message: str, level: str = "info") -> None:
        self.app_events.append(
            EventRecord(self.clock(), "console", source, level, message)  # type: ignore[arg-type]
        )
        if level != "info" and self.is_running:
            self.notify(message, title=source, severity=severity(level), markup=False)

    # -- hosts ---------------------------------------------------------------------------------

    @property
    def active_session(self) -> Session:
        return self.sessions[self.active_host]

    @property
    def active_state(self) -> HostState:
        return self.state_of(self.active_host)

    def state_of(self, host: str) -> HostState:
        """`host`'s folded state (before the boot: a fresh one, connecting)."""
        session = self.sessions.get(host)
        return session.state if session is not None else self._pending[host]

    def _replay_label(self, host: str) -> str:
        """"REPLAY of …" for a recording's session (console.session.replay), else ""."""
        session = self.sessions.get(host)
        return session.replay_label if session is not None else ""

    def _hand_over(
        self, intent: HostIntent, what: str, work: Coroutine[Any, Any, object]
    ) -> None:
        """A host's command, run by its session in a worker (nothing here waits)."""
        self.run_worker(work, group="commands", exit_on_error=False,
                        description=f"{what} on {intent.host}")

    # -- screens -------------------------------------------------------------------------------

    def _render_screen(
        self, screen: Screen[Any], host: str, aspects: tuple[str, ...] | None
    ) -> None:
        """Show `host`'s news on the current screen (`aspects` None: its whole state)."""
        # A dialog is not a HostView: the screen under it is rendered when it is back. A
        # screen not mounted yet has no widgets to update: its on_mount renders the whole
        # state once they exist (a loaded machine delivered host events first).
        if not isinstance(screen, HostView) or not screen.is_mounted:
            return
        if host == self.active_host or screen.shows_every_host:
            try:
                screen.render_host(self.active_state, aspects)
            except NoMatches:
                # Only a screen being torn down may lack its widgets; else it is a bug.
                if screen.is_attached and self.is_running:
                    raise

    def get_screen_dashboard(self) -> DashboardScreen | None:
        screen = self.screen
        return screen if isinstance(screen, DashboardScreen) else None


def severity(level: str) -> Any:
    """A note's level as Textual's notification severity."""
    return {"error": "error", "warning": "warning"}.get(level, "information")
