"""SGLang-format log output (docs/sglang.md §2.1, §2.6).

SGLang lines: `[%Y-%m-%d %H:%M:%S{prefix}] message` on stderr, no level name.
Uvicorn lines: `[%Y-%m-%d %H:%M:%S] INFO:     message`; lifecycle on stderr, access on stdout.
Every record is flushed, as logging.StreamHandler does, so a follower sees it at once.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

_LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40, "critical": 50}


def _stamp(now: float | None = None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now))


class SimLog:
    def __init__(
        self,
        *,
        log_level: str = "info",
        log_level_http: str | None = None,
        access_exclude: list[str] | None = None,
        err: TextIO | None = None,
        out: TextIO | None = None,
    ) -> None:
        self.err = err or sys.stderr
        self.out = out or sys.stdout
        self.level = _LEVELS.get(log_level.lower(), 20)
        self.http_level = _LEVELS.get((log_level_http or log_level).lower(), 20)
        self.access_exclude = tuple(access_exclude or ())

    def sglang(self, message: str, prefix: str = "", level: int = 20) -> None:
        """A line from an SGLang process; `prefix` is the rank prefix like ' TP0'."""
        if level < self.level:
            return
        self.err.write(f"[{_stamp()}{prefix}] {message}\n")
        self.err.flush()

    def warning(self, message: str, prefix: str = "") -> None:
        self.sglang(message, prefix, level=30)

    def raw(self, text: str) -> None:
        """Unformatted stderr output (tracebacks, warnings.warn, tqdm)."""
        self.err.write(text if text.endswith("\n") else text + "\n")
        self.err.flush()

    def uvicorn(self, message: str, level: str = "INFO") -> None:
        if _LEVELS.get(level.lower(), 20) < self.http_level:
            return
        self.err.write(f"[{_stamp()}] {(level + ':').ljust(9)} {message}\n")
        self.err.flush()

    def access(self, client: str, method: str, path: str, status: int, phrase: str) -> None:
        if self.http_level > 20 or path.startswith(self.access_exclude):
            return
        self.out.write(
            f'[{_stamp()}] INFO:     {client} - "{method} {path} HTTP/1.1" {status} {phrase}\n'
        )
        self.out.flush()
