"""Known-bad flag combinations (known_bad.toml): data with sources, checked before a start,
a restart and in the flags editor. A match is a warning, never a refusal."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

DATA = Path(__file__).with_name("known_bad.toml")


@dataclass(frozen=True)
class KnownBad:
    id: str
    flags: dict[str, tuple[str, ...]]
    arch: tuple[str, ...]
    message: str
    hint: str
    source: str

    def matches(self, flags: Mapping[str, Any]) -> bool:
        return all(str(flags.get(name, "")).lower() in values
                   for name, values in self.flags.items())

    def warning(self) -> str:
        where = f" on {', '.join(self.arch)}" if self.arch else ""
        return f"known-bad combination{where}: {self.message} [source: {self.source}]"


@cache
def known_bad() -> tuple[KnownBad, ...]:
    data = tomllib.loads(DATA.read_text(encoding="utf-8"))
    return tuple(
        KnownBad(
            id=str(row["id"]),
            flags={k: tuple(str(v).lower() for v in vs) for k, vs in row["flags"].items()},
            arch=tuple(row.get("arch", ())),
            message=str(row["message"]),
            hint=str(row.get("hint", "")),
            source=str(row["source"]),
        )
        for row in data.get("combo", [])
    )


def check_flags(flags: Mapping[str, Any]) -> list[KnownBad]:
    """Every known-bad combination these flags (name -> value, no dashes) contain."""
    normalised = {str(k).lstrip("-"): v for k, v in flags.items()}
    return [combo for combo in known_bad() if combo.matches(normalised)]
