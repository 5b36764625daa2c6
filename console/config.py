"""Loading the TOML config: discovery, validation with file/key/line errors, value sources."""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import platformdirs
from pydantic import BaseModel, ValidationError

from console.config_models import PlateauConfig
from console.errors import ConfigError
from console.text import sanitize
from console.tomlfile import TomlFileError, loads_toml, read_toml_text

ENV_VAR = "PLATEAU_CONFIG"
APP_NAME = "plateau"

_SECRET_WORDS = ("password", "passphrase", "token", "secret", "api-key", "api_key", "apikey")


@dataclass(frozen=True)
class LoadedConfig:
    """The effective config and where it came from (None: built-in defaults)."""

    config: PlateauConfig
    path: Path | None
    text: str = ""

    @cached_property
    def _key_lines(self) -> dict[tuple[str | int, ...], int]:
        return key_lines(self.text)

    def source_of(self, key_path: tuple[str | int, ...]) -> str:
        """'FILE:LINE' for a value set in the file, else 'default'. One pass over the text
        per config, then a lookup per value: `config show` of 2,000 hosts rescanned the
        whole file for each of its ~30,000 values."""
        if self.path is None:
            return "default"
        lines = self._key_lines
        # The key itself, else the nearest enclosing key assignment (a value inside an inline
        # table or array: `flags = { tp-size = 2 }` sets flags.tp-size on that line).
        for end in range(len(key_path), 0, -1):
            line = lines.get(key_path[:end])
            if line is not None:
                return f"{self.path}:{line}"
        return "default"


def default_config_path() -> Path:
    return Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml"


def discover_config_path(explicit: str | os.PathLike[str] | None) -> tuple[Path | None, str]:
    """The config path to use and why: --config, then $PLATEAU_CONFIG, then the XDG dir."""
    if explicit:
        return Path(explicit).expanduser(), "--config"
    from_env = os.environ.get(ENV_VAR)
    if from_env:
        return Path(from_env).expanduser(), f"${ENV_VAR}"
    xdg = default_config_path()
    if xdg.is_file():
        return xdg, "XDG config dir"
    return None, "built-in defaults (no config file found)"


def load_config(explicit: str | os.PathLike[str] | None = None) -> LoadedConfig:
    """Find and load the config. An explicitly named file must exist."""
    path, _reason = discover_config_path(explicit)
    if path is None:
        return LoadedConfig(PlateauConfig(), None)
    return load_config_file(path)


def load_config_file(path: Path) -> LoadedConfig:
    try:
        text = read_toml_text(path, what="config file")
    except TomlFileError as exc:
        raise ConfigError(str(exc)) from None
    return LoadedConfig(parse_config_text(text, path), path, text)


def parse_config_text(text: str, path: Path) -> PlateauConfig:
    try:
        data = loads_toml(text, path)
    except TomlFileError as exc:
        raise ConfigError(str(exc)) from None
    try:
        return PlateauConfig.model_validate(data)
    except RecursionError:
        raise ConfigError(f"{path}: values nested too deeply") from None
    except ValidationError as exc:
        raise ConfigError(_describe_validation_error(exc, text, path)) from None


def _describe_validation_error(exc: ValidationError, text: str, path: Path) -> str:
    """One line for the first error: file, key, line, and what is wrong."""
    error = exc.errors()[0]
    location = tuple(error["loc"])
    key = format_key(location)
    line = locate_key(text, location)
    where = f"{path}:{line}" if line else str(path)
    if error["type"] == "extra_forbidden":
        message = f"unknown key '{location[-1]}'"
        suggestion = _suggest(str(location[-1]), _allowed_keys(location[:-1]))
        if suggestion:
            message += f" (did you mean '{suggestion}'?)"
    elif error["type"] == "missing":
        message = "missing required key"
        line = locate_key(text, location[:-1])
        where = f"{path}:{line}" if line else str(path)
    else:
        message = error["msg"].removeprefix("Value error, ")
        if "input" in error and error["type"] != "value_error":
            message += f" (got {_short_repr(error['input'])})"
    extra = f" (and {len(exc.errors()) - 1} more problem(s))" if len(exc.errors()) > 1 else ""
    # Keys are the operator's text: a newline or escape in one stays visible, on one line.
    return sanitize(f"{where}: {key}: {message}{extra}")


def _short_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def format_key(location: tuple[Any, ...]) -> str:
    parts: list[str] = []
    for item in location:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        else:
            parts.append(("." if parts else "") + str(item))
    return "".join(parts) or "(top level)"


def _suggest(word: str, candidates: list[str]) -> str | None:
    matches = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    return matches[0] if matches else None


def _allowed_keys(location: tuple[Any, ...]) -> list[str]:
    """Field names of the model at `location` (for "did you mean")."""
    model: type[BaseModel] | None = PlateauConfig
    for item in location:
        if model is None:
            return []
        if isinstance(item, int):
            continue
        field = model.model_fields.get(str(item))
        if field is None:
            # A dict of models (profiles.NAME, sweeps.NAME): NAME is free, keep the value model.
            continue
        model = _model_of(field.annotation)
    return sorted(model.model_fields) if model else []


def _model_of(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_of(arg)
        if found is not None:
            return found
    return None


_TABLE = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")
_KEY = re.compile(r"""^\s*("[^"]*"|'[^']*'|[A-Za-z0-9_.-]+)\s*=""")


def key_lines(text: str) -> dict[tuple[str | int, ...], int]:
    """1-based line of every key assignment in TOML text, by key path (array-of-tables
    entries carry their index: ("hosts", 3, "name")). Best effort, like locate_key."""
    found: dict[tuple[str | int, ...], int] = {}
    table: tuple[str | int, ...] = ()
    array_counts: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        table_match = _TABLE.match(raw)
        if table_match:
            parts = _split_dotted(table_match.group(2))
            if table_match.group(1) == "[[":
                name = ".".join(parts)
                array_counts[name] = array_counts.get(name, -1) + 1
                table = (*parts, array_counts[name])
            else:
                table = tuple(parts)
            continue
        key_match = _KEY.match(raw)
        if key_match:
            found.setdefault((*table, *_split_dotted(key_match.group(1))), number)
    return found


def locate_key(text: str, location: tuple[Any, ...], *, exact: bool = False) -> int | None:
    """Best-effort 1-based line of a key path in TOML text (tomllib keeps no positions).

    Without `exact`, the line of the deepest enclosing key or table is returned."""
    wanted = [str(p) for p in location if not isinstance(p, int)]
    indexes = [p for p in location if isinstance(p, int)]
    table: list[str] = []
    array_counts: dict[str, int] = {}
    best: int | None = None
    best_len = -1
    for number, raw in enumerate(text.splitlines(), start=1):
        table_match = _TABLE.match(raw)
        if table_match:
            table = _split_dotted(table_match.group(2))
            if table_match.group(1) == "[[":
                name = ".".join(table)
                array_counts[name] = array_counts.get(name, -1) + 1
            path = table
            if _array_index_matches(table, array_counts, indexes):
                best, best_len = _better(path, wanted, number, best, best_len)
            continue
        key_match = _KEY.match(raw)
        if key_match and _array_index_matches(table, array_counts, indexes):
            path = table + _split_dotted(key_match.group(1))
            best, best_len = _better(path, wanted, number, best, best_len)
    if exact and best_len != len(wanted):
        return None
    return best


def _better(
    path: list[str], wanted: list[str], number: int, best: int | None, best_len: int
) -> tuple[int | None, int]:
    if path == wanted[: len(path)] and len(path) > best_len:
        return number, len(path)
    return best, best_len


def _array_index_matches(
    table: list[str], array_counts: dict[str, int], indexes: list[int]
) -> bool:
    name = ".".join(table)
    if name not in array_counts or not indexes:
        return True
    return array_counts[name] == indexes[0]


def _split_dotted(key: str) -> list[str]:
    parts = re.findall(r'"([^"]*)"|\'([^\']*)\'|([^.\s]+)', key)
    return [a or b or c for a, b, c in parts]


def is_secret_key(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in _SECRET_WORDS)


def redacted(value: Any, key: str = "") -> Any:
    """A copy of `value` with secret-looking entries replaced by '***'."""
    if key and is_secret_key(key) and not key.endswith("_env"):
        return "***"
    if isinstance(value, dict):
        return {k: redacted(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [redacted(v) for v in value]
    return value


def flatten_config(
    value: Any, prefix: str = "", path: tuple[str | int, ...] = ()
) -> list[tuple[str, tuple[str | int, ...], Any]]:
    """Leaf values of a config dump with dotted keys (`config show`, the config screen);
    lists of scalars stay whole."""
    if isinstance(value, dict) and value:
        rows = []
        for key, item in value.items():
            rows += flatten_config(item, f"{prefix}.{key}" if prefix else str(key), (*path, key))
        return rows
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        rows = []
        for index, item in enumerate(value):
            rows += flatten_config(item, f"{prefix}[{index}]", (*path, index))
        return rows
    return [(prefix, path, value)]
