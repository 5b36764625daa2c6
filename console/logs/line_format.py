"""Raw log lines made safe to show (clean_line) and uvicorn access lines read; the prefix
grammar itself (every shape SGLang and logging configs write) is console/sglang/prefix.py."""

from __future__ import annotations

from dataclasses import dataclass

# The names the assembler's hot loop and the whole-log scan's regex use, from the grammar.
from console.sglang.prefix import (
    ACCESS,
    PREFIX,
    RANKS,
    TIMESTAMP,
    UVICORN_LEVEL,
    logging_config_match,
)
from console.text import sanitize

__all__ = ["ACCESS", "PREFIX", "RANKS", "TIMESTAMP", "UVICORN_LEVEL", "AccessLine",
           "clean_line", "logging_config_match", "parse_access"]

MAX_LINE_CHARS = (1 << 20) + 4096
"""Longer lines are cut (with a marker) on entry, so one runaway line cannot pin unbounded
memory; the widget truncates much earlier for display and shows up to this in the detail pane."""


def clean_line(raw: str) -> str:
    """Make one raw line safe: keep what a terminal would show after `\\r` redraws (tqdm),
    strip escapes, make control characters visible, cap the length."""
    if "\r" in raw:
        parts = [p for p in raw.split("\r") if p]
        raw = parts[-1] if parts else ""
    if len(raw) > MAX_LINE_CHARS:
        dropped = len(raw) - MAX_LINE_CHARS
        raw = f"{raw[:MAX_LINE_CHARS]}… [{dropped} more characters dropped]"
    return sanitize(raw)  # (secrets are redacted by the assembler, for every line)


@dataclass(frozen=True, slots=True)
class AccessLine:
    client: str
    method: str
    path: str
    status: int


def parse_access(message: str) -> AccessLine | None:
    """`127.0.0.1:53514 - "POST /generate HTTP/1.1" 200 OK` (message after `INFO:     `)."""
    found = ACCESS.match(message)
    if found is None:
        return None
    return AccessLine(found.group(1), found.group(2), found.group(3), int(found.group(4)))
