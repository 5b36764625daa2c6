"""Fixtures for the logs area: the sample SGLang log, hostile lines, and a small host app for
the log widgets (used by Pilot and snapshot tests)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.app import App, ComposeResult

from console.logs.assembler import parse_lines
from console.logs.models import LogEvent
from widgets.log_view import LogView
from widgets.server_strip import ServerStrip

LOG_DATA = Path(__file__).resolve().parent.parent / "data" / "logs"
SAMPLE_LOG = LOG_DATA / "sglang_two_launches.log"

HOSTILE_LINES: tuple[str, ...] = (
    "[2026-02-19 05:22:14 TP0] [bold]not bold[/bold] and [red]not red",
    "[2026-02-19 05:22:14 TP0] loss [/ 3 and [type=x, v={'a[0]'}] and tok[/dim]",
    "[2026-02-19 05:22:15] title \x1b]0;PWNED-TITLE\x07 clip \x1b]52;c;ZXZpbA==\x1b\\ clear \x1b[2J"
    " red \x1b[31mRED\x1b[0m end",
    "[2026-02-19 05:22:15] nul \x00 bell \x07 backspace \x08 del \x7f c1 \x9b2J end",
    "[2026-02-19 05:22:16] invalid utf-8: \udcff\udcfe replaced",
    "[2026-02-19 05:22:16] carriage\rreturn overwrite",
)


def sample_events() -> list[LogEvent]:
    return parse_lines(SAMPLE_LOG.read_text("utf-8").splitlines())


class LogTestApp(App[None]):
    """Hosts a LogView and a ServerStrip, nothing else (the real app wires the same calls)."""

    CSS = "Screen { layout: vertical; } ServerStrip { height: 5; }"

    def __init__(self, *, max_lines: int = 50_000) -> None:
        super().__init__()
        self.max_lines = max_lines
        self.copied: list[str] = []

    def compose(self) -> ComposeResult:
        yield ServerStrip(id="strip")
        yield LogView(id="log", max_lines=self.max_lines)

    def copy_to_clipboard(self, text: str) -> None:
        self.copied.append(text)
        super().copy_to_clipboard(text)


@pytest.fixture
def sample_log_path() -> Path:
    return SAMPLE_LOG


@pytest.fixture
def log_test_app() -> LogTestApp:
    return LogTestApp()
