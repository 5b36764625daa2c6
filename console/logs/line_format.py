"""SGLang's line format (docs/sglang.md §2.1, §2.6): prefix, rank parts, uvicorn level/access lines.

`[%(asctime)s{.ms}{ranks}] %(message)s` with ranks in the emitted order
DP, PP, ATTN_CP, MOE_DP, TP, EP (the in-tree log_parser.py has the order wrong).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from console.text import sanitize

# Encoder disaggregation uses ` encode_server` / ` encode_dp_worker[N]` instead of ranks.
# `(?:x|)` rather than `(?:x)?`: the same matches, faster in `re`. The pieces are public for
# the whole-log scan's regex (scan_rows.py). ASCII: \d is [0-9] (faster, and a timestamp in
# other scripts' digits is not SGLang's).
TIMESTAMP = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d{3}|)"
RANKS = (r"(?: DP\d+|)(?: PP\d+|)(?: ATTN_CP\d+|)(?: MOE_DP\d+|)(?: TP\d+|)(?: EP\d+|)"
         r"|(?: encode_server| encode_dp_worker\[\d+\])")
PREFIX = re.compile(rf"\[({TIMESTAMP})({RANKS})\] ?", re.ASCII)
UVICORN_LEVEL = re.compile(r"(TRACE|DEBUG|INFO|WARNING|ERROR|CRITICAL):\s+")
ACCESS = re.compile(r'(\S+) - "([A-Z]+) (\S+) HTTP/[\d.]+" (\d{3})(?: (.*))?$')

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
