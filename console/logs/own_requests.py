"""The console's own requests in the server's access log (health, readiness, metrics, info).

A console that polls `/ready`, `/health`, `/metrics` and `/server_info` writes an access line
per poll into the very log it shows; after a sweep they were every visible line. They are
recognised here (GET of those paths), graded DEBUG whatever their status (a 503 from `/ready`
during startup is the answer to the question, not a problem), folded away by default in the
log view, and counted per minute so the folding never hides that they happen.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable

from console.logs.models import LogEvent
from console.sglang import endpoints
from console.sglang.prefix import parse_timestamp

PROBE_PATHS = frozenset({"/metrics", "/ready", "/health", *endpoints.SERVER_INFO_PATHS})
_PROBE = re.compile(r'\S+ - "GET (/[a-z_]+)[ ?]')


def is_probe_path(method: str, path: str) -> bool:
    return method == "GET" and path.partition("?")[0] in PROBE_PATHS


def is_console_probe(kind: str, message: str) -> bool:
    """An access line (message after `INFO:     `) of one of the console's own polls."""
    if kind != "access":
        return False
    found = _PROBE.match(message)
    return found is not None and found.group(1) in PROBE_PATHS


class ProbeRate:
    """How many of the console's own access lines the last minute of log time held."""

    def __init__(self) -> None:
        self._times: deque[float] = deque()
        self.total = 0

    def add(self, events: Iterable[LogEvent]) -> None:
        times = self._times
        for event in events:
            if is_console_probe(event.kind, event.message):
                self.total += 1
                when = parse_timestamp(event.timestamp) if event.timestamp else None
                if when is not None:
                    times.append(when.timestamp())
        while times and times[-1] - times[0] > 60.0:
            times.popleft()

    @property
    def per_minute(self) -> int:
        return len(self._times)
