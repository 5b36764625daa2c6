"""The dashboard's four panels: which widget shows each (GpuPanel, ServerStrip, LogView,
SweepChart) and how the session's state is handed to it. The `*_widget` / `show_*` functions
are the only place the dashboard touches the widgets' data API.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from console.logs.models import LogEvent
from console.logs.stats_snapshot import ServerStats
from widgets.gpu_panel import GpuPanel
from widgets.log_view import LogView
from widgets.server_strip import ServerStrip
from widgets.sweep_chart import SweepChart

if TYPE_CHECKING:  # a sweep's steps: the run models come with the first sweep
    from console.app.boot import UiView
    from console.bench.models import StepResult
    from console.gpu.models import GpuHeader, GpuSample  # with the first GPU sample

# -- GPU panel ------------------------------------------------------------------------------


def gpu_widget(ui: UiView, id: str = "gpu-view") -> GpuPanel:
    """The GPU panel, its util/memory/power bars coloured at the operator's load levels
    (`ui.gpu_load_mid` / `ui.gpu_load_high`, the levels the help panel shows)."""
    return GpuPanel(id=id, ascii_only=ui.ascii,
                    load_thresholds=(ui.gpu_load_mid, ui.gpu_load_high))


def show_gpus(
    widget: GpuPanel, header: GpuHeader | None, samples: Sequence[GpuSample],
    failure: str | None = None,
) -> None:
    """Feed the GPU panel the header (None: not yet known) and the samples it has not seen,
    oldest first, so its history has every point even when several arrived between draws;
    `failure`: why the agent failed (None: it has not, or samples come again)."""
    if not widget.is_mounted:
        # GpuPanel mounts its rows only once mounted (is_mounted is still False in on_mount).
        widget.app.call_after_refresh(show_gpus, widget, header, samples, failure)
        return
    widget.show_failure(failure)
    if header is not None and widget.header is not header:
        widget.update_header(header)
    for sample in samples:
        if widget.sample is not sample:
            widget.update_sample(sample)


# -- server strip ---------------------------------------------------------------------------


def server_widget(ascii_only: bool) -> ServerStrip:
    return ServerStrip(ascii_only=ascii_only, id="server-view")


def show_stats(widget: ServerStrip, stats: ServerStats | None) -> None:
    if stats is not None:
        widget.update_stats(stats)


# -- log view -------------------------------------------------------------------------------


def log_widget(max_lines: int) -> LogView:
    return LogView(id="log-view", max_lines=max_lines)


def reset_log(widget: LogView, events: Sequence[LogEvent]) -> None:
    widget.clear()
    append_log(widget, events)


def append_log(widget: LogView, events: Sequence[LogEvent]) -> None:
    if events:
        widget.append_events(tuple(events))


# -- sweep chart ----------------------------------------------------------------------------


class DashboardSweepChart(SweepChart):
    """The dashboard's chart: the live sweep, or an A/B overlay until the next live sweep."""

    overlay = False


def sweep_widget(ascii_only: bool) -> DashboardSweepChart:
    return DashboardSweepChart(id="sweep-view", ascii_only=ascii_only)


def show_sweep(
    widget: DashboardSweepChart,
    points: Sequence[StepResult],
    progress: str,
    runs: Sequence[tuple[str, Sequence[StepResult]]] | None = None,
    label: str = "live",
) -> None:
    """The live sweep (`label`: "live" while it runs, else the run), or with `runs` an
    overlay (A/B: series A and B in their colours)."""
    if runs is not None:
        widget.set_runs(list(runs))
        widget.set_progress(progress)
        widget.overlay = True
        return
    if widget.overlay:
        widget.set_runs([])  # back from an overlay: the live sweep is a single series again
        widget.overlay = False
    widget.show(tuple(points), progress, label)
