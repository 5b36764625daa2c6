"""What a screen (or the command palette) may ask of the console app: the typed contract that
lets them render without importing the app module (which imports them).

Attributes and queries flow down (config, the active host's state, the header line); actions
go up by id or name (`run_action_id`, `switch_host`, `use_theme`, `ask_host_key`), the same
ids the key bindings and the palette use. PlateauApp satisfies it (mypy checks that in
console/app/app.py), and `console_app(widget)` gives a widget its app as this contract.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol, cast

from textual.app import App

from console.config import LoadedConfig
from console.config_models import PlateauConfig
from console.session.protocol import Session
from console.session.state import Clock, EventRecord, HostState
from widgets.header import HeaderInfo


class ConsoleApp(Protocol):
    config: PlateauConfig
    loaded: LoadedConfig
    store_path: Path | None
    sessions: dict[str, Session]
    host_names: list[str]
    active_host: str
    hidden_panels: set[str]
    marked_runs: list[int]
    ab_plans: dict[str, Any]  # host -> console.app.screens.dashboard.ABPlan of its running A/B
    tunes: dict[str, Any]  # host -> console.app.tune_control.TuneControl
    tune_bench_for: Any  # (session, store) -> the tune's bench; None: the session's own
    profiles_dir: Path
    """Run ids marked in history for compare."""
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

    def run_action_id(self, action_id: str) -> None: ...

    def switch_host(self, name: str) -> None: ...

    def set_on_screen_hosts(self, hosts: Sequence[str]) -> None:
        """The hosts whose figures are on screen now (the others sample slower)."""
        ...

    def use_theme(self, name: str) -> None: ...

    def ask_host_key(self, name: str) -> None: ...

    def open_suggestion_ab(self, cause: Any, run_profile: str | None,
                           plan: Any = None) -> None:
        """A diagnosis cause's suggestion as profile B of an A/B (the Why view's keys), at the
        levels and with the workload of `plan` (console.app.suggest_ab.CauseAB)."""
        ...

    def add_profile(self, name: str, profile: Any, *, persist: bool) -> bool: ...

    def batch_update(self) -> AbstractContextManager[None]: ...


class _InApp(Protocol):
    """A screen, widget or palette provider: anything that knows its running app."""

    @property
    def app(self) -> App[object]: ...


def console_app(node: _InApp) -> ConsoleApp:
    """The running console app of `node`, as the contract."""
    return cast(ConsoleApp, node.app)
