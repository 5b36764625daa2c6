"""Reading operator-written TOML files (config, saved profiles, themes) safely.

Two things made these reads crash instead of saying one line: `read_text` of `/dev/zero` or
`/dev/urandom` grew without bound (gigabytes, then MemoryError), and a deeply nested value
(`a = [[[[...]]]]`) ran tomllib into RecursionError. Both become TomlFileError, whose message
names the file.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

MAX_TOML_BYTES = 4 << 20
"""Far above any real config (2,000 hosts take about 200 KB), far below what hurts."""


class TomlFileError(ValueError):
    """A TOML file cannot be used; the message starts with its path."""


def read_toml_text(path: Path, *, what: str, max_bytes: int = MAX_TOML_BYTES) -> str:
    """The text of `path`, read with a size bound (works for pipes and devices too)."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(max_bytes + 1)
    except FileNotFoundError:
        raise TomlFileError(f"{path}: {what} not found") from None
    except IsADirectoryError:
        raise TomlFileError(f"{path}: {what} is a directory") from None
    except OSError as exc:
        raise TomlFileError(f"{path}: cannot read {what} ({exc.strerror or exc})") from None
    if len(raw) > max_bytes:
        raise TomlFileError(
            f"{path}: {what} is larger than {max_bytes // (1 << 20)} MiB; is this the right file?"
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TomlFileError(
            f"{path}: {what} is not UTF-8 text (bad byte at offset {exc.start})"
        ) from None


def loads_toml(text: str, path: Path | str) -> dict[str, Any]:
    """Parse TOML; syntax errors and too-deep nesting become one TomlFileError line."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TomlFileError(f"{path}: invalid TOML: {exc}") from None
    except RecursionError:
        raise TomlFileError(f"{path}: invalid TOML: values nested too deeply") from None

