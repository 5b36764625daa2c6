"""Plain-text and SVG captures of the running app's current screen."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console
from textual.app import App


def export_text(app: App[Any]) -> str:
    """The screen as plain text (one line per row, trailing spaces stripped)."""
    width, height = app.size
    console = Console(
        width=width,
        height=height,
        file=io.StringIO(),
        force_terminal=True,
        color_system="truecolor",
        record=True,
        legacy_windows=False,
        safe_box=False,
    )
    render = app.screen._compositor.render_update(
        full=True, screen_stack=app._background_screens, simplify=True
    )
    console.print(render)
    text = console.export_text(styles=False)
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


def export_svg(app: App[Any], title: str | None = None) -> str:
    return app.export_screenshot(title=title)
