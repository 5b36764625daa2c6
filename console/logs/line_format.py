"""Raw log lines made safe to show (clean_line) and uvicorn access lines read; the prefix
grammar itself (every shape SGLang and logging configs write) is console/sglang/prefix.py."""

from __future__ import annotations

from dataclasses import dataclass

# The names the assembler's hot loop and the whole-log scan's regex use, from the grammar.
from console.sglang.prefix import (
    ACCESS,
    PREFIX,
    PY_LOGGING,
    RANKS,
    TIMESTAMP,
    UVICORN_LEVEL,
    logging_config_match,
)
from console.text import sanitize

__all__ = ["ACCESS", "PREFIX", "PY_LOGGING", "RANKS", "TIMESTAMP", "UVICORN_LEVEL", "AccessLine",
           "clean_line", "last_redraw", "logging_config_match", "parse_access",
           "resolve_redraws"]

MAX_LINE_CHARS = (1 << 20) + 4096
"""Longer lines are cut (with a marker) on entry, so one runaway line cannot pin unbounded
memory; the widget truncates much earlier for display and shows up to this in the detail pane."""


def clean_line(raw: str) -> str:
    """Make one raw line safe: keep what a terminal would show after `\\r` redraws (tqdm),
    strip escapes, make control characters visible, cap the length."""
    raw = last_redraw(raw)
    if len(raw) > MAX_LINE_CHARS:
        dropped = len(raw) - MAX_LINE_CHARS
        raw = f"{raw[:MAX_LINE_CHARS]}… [{dropped} more characters dropped]"
    return sanitize(raw)  # (secrets are redacted by the assembler, for every line)


def last_redraw(line: str) -> str:
    """What a terminal shows of a line a `\\r` redrew (tqdm): its last non-empty part."""
    if "\r" not in line:
        return line
    parts = [p for p in line.split("\r") if p]
    return parts[-1] if parts else ""


def resolve_redraws(text: str) -> str:
    """`text` with each line's `\\r` redraws resolved (last_redraw): a file has as many
    lines as it has `\\n`, however often a bar redrew one (logscan's count, clean_line's
    reading; `\\r\\n` line ends included)."""
    if "\r" not in text:
        return text
    return "\n".join(last_redraw(line) for line in text.split("\n"))


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
