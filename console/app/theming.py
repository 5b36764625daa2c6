"""Themes as data files: load themes/*.toml, validate them, register them with the app.

A broken theme file never stops the console: it is skipped with a message, and if the theme
the config asks for is missing or broken the default theme is used instead (with a message
saying so). The messages are returned, not printed, so the app can put them in its event log.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from textual.color import Color, ColorParseError
from textual.theme import Theme

import themes as themes_package
from console import ui_defaults
from console.tomlfile import TomlFileError, loads_toml, read_toml_text

DEFAULT_THEME = ui_defaults.THEME
# `themes` may load as a namespace package under an editable install (no __file__).
THEME_DIR = Path(next(iter(themes_package.__path__)))

# The semantic variables every widget may reference in DEFAULT_CSS; each theme defines all.
REQUIRED_VARIABLES: tuple[str, ...] = (
    "gpu-load-low",
    "gpu-load-mid",
    "gpu-load-high",
    "log-error",
    "log-warn",
    "log-info",
    "log-debug",
    "log-notable",
    "series-a",
    "series-b",
    "series-c",
    "state-ready",
    "state-starting",
    "state-failed",
)
_COLOUR_FIELDS = (
    "primary",
    "secondary",
    "accent",
    "foreground",
    "background",
    "surface",
    "panel",
    "boost",
    "success",
    "warning",
    "error",
)
_ALLOWED_KEYS = {"name", "dark", "variables", *_COLOUR_FIELDS}


class ThemeFileError(ValueError):
    """A theme file is malformed; the message names the file and the problem."""


@dataclass
class ThemeLoad:
    """What loading the theme directories produced."""

    themes: dict[str, Theme] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def parse_theme_file(path: Path) -> Theme:
    """One theme file -> a Textual Theme, or ThemeFileError naming what is wrong."""
    try:
        data = loads_toml(read_toml_text(path, what="theme"), path)
    except TomlFileError as exc:
        raise ThemeFileError(str(exc)) from None
    return theme_from_mapping(data, str(path))


def theme_from_mapping(data: dict[str, object], where: str) -> Theme:
    unknown = sorted(set(data) - _ALLOWED_KEYS)
    if unknown:
        raise ThemeFileError(f"{where}: unknown key(s): {', '.join(unknown)}")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise ThemeFileError(f"{where}: `name` is required")
    if "primary" not in data:
        raise ThemeFileError(f"{where}: `primary` is required")
    dark = data.get("dark", True)
    if not isinstance(dark, bool):
        raise ThemeFileError(f"{where}: `dark` must be true or false")
    colours: dict[str, str] = {}
    for key in _COLOUR_FIELDS:
        if key in data:
            colours[key] = _colour(data[key], f"{where}: {key}")
    variables = data.get("variables", {})
    if not isinstance(variables, dict):
        raise ThemeFileError(f"{where}: [variables] must be a table")
    missing = [v for v in REQUIRED_VARIABLES if v not in variables]
    if missing:
        raise ThemeFileError(f"{where}: missing variable(s): {', '.join(missing)}")
    checked = {
        str(key): _colour(value, f"{where}: variables.{key}") for key, value in variables.items()
    }
    get = colours.get
    return Theme(
        name=name, dark=dark, variables=checked, primary=colours["primary"],
        secondary=get("secondary"), accent=get("accent"), foreground=get("foreground"),
        background=get("background"), surface=get("surface"), panel=get("panel"),
        boost=get("boost"), success=get("success"), warning=get("warning"), error=get("error"),
    )


def _colour(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise ThemeFileError(f"{where}: colour must be a string like \"#12ab34\"")
    try:
        Color.parse(value)
    except ColorParseError:
        raise ThemeFileError(f"{where}: {value!r} is not a colour") from None
    return value


def load_themes(*directories: Path) -> ThemeLoad:
    """Every *.toml theme in `directories` (later directories override earlier names)."""
    result = ThemeLoad()
    for directory in directories or (THEME_DIR,):
        if not directory.is_dir():
            continue
        for path in sorted(directory.glob("*.toml")):
            try:
                theme = parse_theme_file(path)
            except ThemeFileError as exc:
                result.problems.append(f"theme skipped: {exc}")
                continue
            result.themes[theme.name] = theme
    return result


def fallback_theme() -> Theme:
    """A built-in copy of plateau-dark, used when even the shipped file is broken."""
    base = {
        "gpu-load-low": "#5FB878",
        "gpu-load-mid": "#E5C04B",
        "gpu-load-high": "#E0605A",
        "log-error": "#FF6B63",
        "log-warn": "#E5C04B",
        "log-info": "#C4CCD6",
        "log-debug": "#6B7684",
        "log-notable": "#6CC4E8",
        "series-a": "#5B9BD5",
        "series-b": "#E5A84B",
        "series-c": "#B48EDC",
        "state-ready": "#5FB878",
        "state-starting": "#E5C04B",
        "state-failed": "#E0605A",
        "panel-border": "#444C58",  # optional in theme files: this is its default
    }
    return Theme(
        name=DEFAULT_THEME,
        dark=True,
        primary="#5B9BD5",
        secondary="#8E7CC3",
        accent="#E5A84B",
        foreground="#D8DEE6",
        background="#12161C",
        surface="#1A2029",
        panel="#232B36",
        success="#5FB878",
        warning="#E5C04B",
        error="#E0605A",
        variables=base,
    )


def choose_theme(wanted: str, available: dict[str, Theme]) -> tuple[str, str | None]:
    """The theme name to use and, when it is not `wanted`, why."""
    if wanted in available:
        return wanted, None
    known = ", ".join(sorted(available)) or "none"
    reason = f"theme {wanted!r} not found or invalid (have: {known}); using {DEFAULT_THEME}"
    return DEFAULT_THEME, reason
