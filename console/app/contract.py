"""What a screen (or the command palette) may ask of the console app: the typed contract that
lets them render without importing the app module (which imports them).

Attributes and queries flow down (config, the active host's state, the header line); actions
go up by id or name (`run_action_id`, `switch_host`, `use_theme`, `ask_host_key`), the same
ids the key bindings and the palette use, and a screen's own intents go up as messages
(console.app.messages: `RunMarkToggled`, `SuggestionABRequested`). A screen that shows a host
is a `HostView`. PlateauApp satisfies it (mypy checks that in
console/app/app.py), and `console_app(widget)` gives a widget its app as this contract.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, cast, runtime_checkable

from textual.app import App

from console.session.protocol import Session
from console.session.state import Clock, EventRecord, HostState
from widgets.header import HeaderInfo

if TYPE_CHECKING:
    from console.app.boot import UiView
    from console.app.progress import ABPlan
    from console.config import LoadedConfig
    from console.config_models import PlateauConfig, ServerProfile
    from console.server.refusal import HostFacts
    from console.session.tune_control import TuneControl


class ConsoleApp(Protocol):
    @property
    def config(self) -> PlateauConfig:
        """The config, with this run's profile set."""
        ...

    @property
    def loaded(self) -> LoadedConfig: ...

    booted: bool
    """The config and sessions are here (console.app.boot: a console may draw before)."""

    @property
    def ui(self) -> UiView:
        """The [ui] values screens are built with (the first frame's until the boot)."""
        ...

    @property
    def keymap(self) -> Mapping[str, str]: ...

    def state_of(self, host: str) -> HostState: ...

    store_path: Path | None
    sessions: dict[str, Session]
    host_names: list[str]
    active_host: str
    hidden_panels: set[str]
    marked_runs: list[int]
    """Run ids marked in history for compare (a screen asks with RunMarkToggled)."""
    ab_plans: dict[str, ABPlan]
    """host -> the plan (estimated steps and time) of the A/B it runs."""
    tunes: dict[str, TuneControl]
    """host -> its tune (the Tune view)."""
    tune_bench_for: Any  # (session, store) -> the tune's bench; None: the session's own
    profiles_dir: Path
    plateau_theme_names: list[str]
    clock: Clock

    @property
    def active_state(self) -> HostState: ...

    def header_info(self, state: HostState) -> HeaderInfo: ...

    def all_events(self) -> list[EventRecord]: ...

    def effective_keys(self) -> dict[str, str]: ...

    def unavailable_reason(self, action_id: str) -> str | None:
        """Why the action cannot run now (None: it can)."""
        ...

    def footer_state(self, action_id: str) -> str:
        """"enabled", "disabled" (greyed: relevant, not now) or "hidden" (irrelevant now)."""
        ...

    def host_facts(self, host: str) -> HostFacts:
        """What the refusal policy (console.server.refusal) looks at for `host`."""
        ...

    def run_action_id(self, action_id: str) -> None: ...

    def switch_host(self, name: str) -> None: ...

    def set_on_screen_hosts(self, hosts: Sequence[str], *, rows: bool = False) -> None:
        """The hosts whose figures are on screen now (the others sample slower); `rows`:
        as fleet rows only (their /metrics slower too)."""
        ...

    def use_theme(self, name: str) -> None: ...

    def ask_host_key(self, name: str) -> None: ...

    def add_profile(self, name: str, profile: ServerProfile, *, persist: bool) -> bool: ...

    def batch_update(self) -> AbstractContextManager[None]: ...


@runtime_checkable
class HostView(Protocol):
    """A screen that shows a host: the app hands it the news (`render_host`; `aspects` None:
    the whole state) and the clock's tick (`refresh_header`)."""

    shows_every_host: ClassVar[bool]
    """Rendered on every host's news, not only the active host's (the event log)."""

    def render_host(self, state: HostState | None, aspects: tuple[str, ...] | None) -> None: ...

    def refresh_header(self, state: HostState | None) -> None: ...


class _InApp(Protocol):
    """A screen, widget or palette provider: anything that knows its running app."""

    @property
    def app(self) -> App[object]: ...


def console_app(node: _InApp) -> ConsoleApp:
    """The running console app of `node`, as the contract."""
    return cast(ConsoleApp, node.app)
