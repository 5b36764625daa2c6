"""The type of pytest-textual-snapshot's `snap_compare` fixture.

The plugin annotates the fixture as `Callable[[str | PurePath], bool]`, narrower than the
function it returns (`compare(app, press, terminal_size, run_before)`, pytest_textual_snapshot
1.1), so a test that passes an App or a terminal size needs this instead.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from pathlib import PurePath
from typing import Any, Protocol

from textual.app import App
from textual.pilot import Pilot


class SnapCompare(Protocol):
    def __call__(
        self,
        app: str | PurePath | App[Any],
        press: Iterable[str] = ...,
        terminal_size: tuple[int, int] = ...,
        run_before: Callable[[Pilot[Any]], Awaitable[None] | None] | None = ...,
    ) -> bool: ...
