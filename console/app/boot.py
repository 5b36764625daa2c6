"""A console whose first frame comes before its config and sessions (`plateau demo`).

Pydantic's import and the config's models were a third of what the demo's first frame cost
over a bare Textual app (issue 42). A console built with a `BootPlan` draws its layout from a
`FirstFrame` (host names, the [ui] values the panels are built with, keymap, theme: plain
values, no model), then runs the plan's `boot` (the config, the sessions) once that frame is on
the terminal, and only then starts the sessions, as every console does. Until the boot lands the
host's state is a fresh one (connecting), so the frame reads as any console's first frame does;
keys pressed meanwhile act once it has landed (quit at once). A boot that fails ends the console
with its error.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from console import ui_defaults

if TYPE_CHECKING:
    from console.config import LoadedConfig
    from console.session.protocol import Session


class UiView(Protocol):
    """The [ui] values a console's screens are built with (console.config_models.UiConfig)."""

    @property
    def ascii(self) -> bool: ...

    @property
    def log_max_lines(self) -> int: ...

    @property
    def gpu_load_mid(self) -> float: ...

    @property
    def gpu_load_high(self) -> float: ...


@dataclass(frozen=True)
class DefaultUi:
    """[ui] as a config without that table has it (console.ui_defaults, UiConfig's own)."""

    ascii: bool = ui_defaults.ASCII
    log_max_lines: int = ui_defaults.LOG_MAX_LINES
    gpu_load_mid: float = ui_defaults.GPU_LOAD_MID
    gpu_load_high: float = ui_defaults.GPU_LOAD_HIGH


@dataclass(frozen=True)
class FirstFrame:
    """What the console draws before its boot lands: these must be what the booted config
    says (the frame is not redrawn for a change of [ui] or keymap)."""

    hosts: tuple[str, ...]
    active_host: str
    profile: str | None = None
    """The active host's configured profile (the header names it)."""
    engine: str | None = None
    """That profile's engine (console.engines; None: SGLang)."""
    ui: UiView = field(default_factory=DefaultUi)
    keymap: Mapping[str, str] = field(default_factory=dict)
    theme: str = ui_defaults.THEME


@dataclass(frozen=True)
class Booted:
    """What the boot made: the console's config and one session per host of `first.hosts`."""

    loaded: LoadedConfig
    sessions: Sequence[Session]
    active_host: str
    store_path: Path | None = None
    profiles_dir: Path | None = None
    startup_notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class BootPlan:
    first: FirstFrame
    boot: Callable[[], Awaitable[Booted]]

