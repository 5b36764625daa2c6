"""The dashboard's four panels, behind one narrow adapter each.

Each panel is another area's widget (GpuPanel, ServerStrip, LogView, SweepChart). Until it is
importable the app shows a small built-in stand-in with the same data, so the console works
while the areas land; the `*_widget` / `show_*` functions are the only place that knows which.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from textual.content import Content
from textual.widget import Widget
from textual.widgets import Static

from console.logs.models import LogEvent


def _optional(module: str, name: str) -> Any | None:
    try:
        return getattr(importlib.import_module(module), name)
    except (ModuleNotFoundError, AttributeError):
        return None


# -- bars and sparklines (ASCII fallback) ---------------------------------------------------

_BLOCKS = " ▁▂▃▄▅▆▇█"
_ASCII_LEVELS = " .:-=+*#%"


def sparkline(values: Sequence[float], width: int, ascii_only: bool) -> str:
    if not values or width <= 0:
        return ""
    values = list(values)[-width:]
    top = max(values) or 1.0
    chars = _ASCII_LEVELS if ascii_only else _BLOCKS
    return "".join(chars[min(len(chars) - 1, round(v / top * (len(chars) - 1)))] for v in values)


def bar(fraction: float, width: int, ascii_only: bool) -> str:
    fraction = max(0.0, min(1.0, fraction))
    filled = round(fraction * width)
    full, empty = ("#", ".") if ascii_only else ("█", "░")
    return full * filled + empty * (width - filled)


# -- GPU panel ------------------------------------------------------------------------------


def gpu_widget(ascii_only: bool, id: str = "gpu-view") -> Widget:
    from widgets.gpu_panel import GpuPanel

    return GpuPanel(id=id, ascii_only=ascii_only)


def show_gpus(widget: Widget, header: Any, sample: Any) -> None:
    """Feed the GPU panel (console.gpu GpuHeader / GpuSample; either may be None)."""
    if not widget.is_mounted:
        # GpuPanel mounts its rows only once mounted (is_mounted is still False in on_mount).
        widget.app.call_after_refresh(show_gpus, widget, header, sample)
        return
    if header is not None and getattr(widget, "header", None) is not header:
        widget.update_header(header)  # type: ignore[attr-defined]
    if sample is not None and getattr(widget, "sample", None) is not sample:
        widget.update_sample(sample)  # type: ignore[attr-defined]


# -- server strip ---------------------------------------------------------------------------


def server_widget(ascii_only: bool) -> Widget:
    from widgets.server_strip import ServerStrip

    return ServerStrip(ascii_only=ascii_only, id="server-view")


def show_stats(widget: Widget, stats: Any) -> None:
    if stats is not None:
        widget.update_stats(stats)  # type: ignore[attr-defined]


# -- log view -------------------------------------------------------------------------------


def log_widget(max_lines: int) -> Widget:
    from widgets.log_view import LogView

    return LogView(id="log-view", max_lines=max_lines)


def reset_log(widget: Widget, events: Sequence[LogEvent]) -> None:
    widget.clear()  # type: ignore[attr-defined]
    append_log(widget, events)


def append_log(widget: Widget, events: Sequence[LogEvent]) -> None:
    if events:
        widget.append_events(tuple(events))  # type: ignore[attr-defined]


# -- sweep chart ----------------------------------------------------------------------------


class SweepStandIn(Static):
    """Total tok/s per concurrency as horizontal bars (a stand-in for SweepChart)."""

    def __init__(self, *, ascii_only: bool, id: str | None = None) -> None:
        super().__init__("no sweep yet — press s", id=id, markup=False)
        self.ascii_only = ascii_only

    def show(self, points: Sequence[Any], progress: str = "") -> None:
        rows = [
            (p.concurrency, p.metrics.total_tok_s)
            for p in points
            if getattr(p, "metrics", None) is not None
        ]
        if not rows:
            self.update(progress or "no sweep yet — press s")
            return
        top = max(v for _, v in rows) or 1.0
        lines = [Content.styled(progress or "total tok/s vs concurrency", "bold")]
        for conc, value in rows:
            lines.append(
                Content.assemble(
                    f"{conc:>5} ",
                    (bar(value / top, 30, self.ascii_only), "$series-a"),
                    f" {value:,.0f}",
                )
            )
        self.update(Content("\n").join(lines))


def sweep_widget(ascii_only: bool) -> Widget:
    cls = _optional("widgets.sweep_chart", "SweepChart")
    if cls is not None:
        return cls(id="sweep-view", ascii_only=ascii_only)  # type: ignore[no-any-return]
    return SweepStandIn(ascii_only=ascii_only, id="sweep-view")


def show_sweep(
    widget: Widget,
    points: Sequence[Any],
    progress: str,
    runs: Sequence[tuple[str, Sequence[Any]]] | None = None,
) -> None:
    """The live sweep, or with `runs` an overlay (A/B: series A and B in their colours)."""
    set_runs = getattr(widget, "set_runs", None)
    overlay = getattr(widget, "_plateau_overlay", False)
    if runs is not None and callable(set_runs):
        set_runs(list(runs))
        widget.set_progress(progress)  # type: ignore[attr-defined]
        widget._plateau_overlay = True  # type: ignore[attr-defined]
        return
    if overlay and callable(set_runs):
        set_runs([])  # back from an overlay: the live sweep is a single series again
        widget._plateau_overlay = False  # type: ignore[attr-defined]
    fn = getattr(widget, "show", None)
    if callable(fn):
        fn(tuple(points), progress)
