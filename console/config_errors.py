"""Where a config value sits in its TOML text (tomllib keeps no positions) and one-line
validation errors that name file, key and line."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from console.text import sanitize

__all__ = ["describe_validation_error", "format_key", "key_line", "key_lines", "locate_key"]


def describe_validation_error(
    exc: ValidationError, text: str, path: Path, root: type[BaseModel]
) -> str:
    """One line for the first error: file, key, line, and what is wrong."""
    error = exc.errors()[0]
    location = tuple(error["loc"])
    key = format_key(location)
    line = locate_key(text, location)
    where = f"{path}:{line}" if line else str(path)
    if error["type"] == "extra_forbidden":
        message = f"unknown key '{location[-1]}'"
        suggestion = _suggest(str(location[-1]), _allowed_keys(root, location[:-1]))
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


def _allowed_keys(root: type[BaseModel], location: tuple[Any, ...]) -> list[str]:
    """Field names of the model at `location` (for "did you mean")."""
    model: type[BaseModel] | None = root
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


def _toml_lines(text: str) -> Iterator[tuple[int, list[str], int | None, list[str] | None]]:
    """Each table header and key assignment in TOML text: (1-based line, the table's path,
    its index when it is an array-of-tables entry, the key's parts or None for a header)."""
    table: list[str] = []
    index: int | None = None
    array_counts: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        table_match = _TABLE.match(raw)
        if table_match:
            table = _split_dotted(table_match.group(2))
            index = None
            if table_match.group(1) == "[[":
                name = ".".join(table)
                index = array_counts[name] = array_counts.get(name, -1) + 1
            yield number, table, index, None
            continue
        key_match = _KEY.match(raw)
        if key_match:
            yield number, table, index, _split_dotted(key_match.group(1))


def key_lines(text: str) -> dict[tuple[str | int, ...], int]:
    """1-based line of every key assignment in TOML text, by key path (array-of-tables
    entries carry their index: ("hosts", 3, "name")). Best effort, like locate_key."""
    found: dict[tuple[str | int, ...], int] = {}
    for number, table, index, key in _toml_lines(text):
        if key is not None:
            where: tuple[str | int, ...] = (*table, index) if index is not None else (*table,)
            found.setdefault((*where, *key), number)
    return found


def key_line(lines: dict[tuple[str | int, ...], int], key: tuple[str | int, ...]) -> int | None:
    """The line (of `key_lines`) that sets `key`, else of its nearest enclosing key (a value
    inside an inline table or array: `flags = { tp-size = 2 }` sets flags.tp-size there)."""
    for end in range(len(key), 0, -1):
        line = lines.get(key[:end])
        if line is not None:
            return line
    return None


def locate_key(text: str, location: tuple[Any, ...], *, exact: bool = False) -> int | None:
    """Best-effort 1-based line of a key path in TOML text (tomllib keeps no positions).

    Without `exact`, the line of the deepest enclosing key or table is returned."""
    wanted = [str(p) for p in location if not isinstance(p, int)]
    indexes = [p for p in location if isinstance(p, int)]
    best: int | None = None
    best_len = -1
    for number, table, index, key in _toml_lines(text):
        if index is None or not indexes or index == indexes[0]:
            path = table if key is None else table + key
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


def _split_dotted(key: str) -> list[str]:
    parts = re.findall(r'"([^"]*)"|\'([^\']*)\'|([^.\s]+)', key)
    return [a or b or c for a, b, c in parts]
