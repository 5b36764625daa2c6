"""The dashboard: header, GPU panel | server strip, log, sweep chart, footer.

Every size from 80x24 up is planned, not squeezed: `plan_layout` gives each panel its rows
from the terminal size, the GPU count and which panels are shown. The log keeps a useful
minimum; the GPU rows go two a line (then scroll) when they would take it; the sweep chart
becomes its knee in one line when a plot would not fit; short terminals (`-short`) trade the
panels' boxes for a title rule each; narrow ones (`-narrow`) stack the GPU panel over a
two-column server strip. Panels are toggled with 1-4 and maximised with `z`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widget import Widget

from console.app import panels
from console.app.contract import console_app
from console.app.footer import PlateauFooter
from console.app.progress import progress_line, sweep_line
from console.app.screens.fresh import FreshScreen
from console.session.state import HostState
from widgets.header import PlateauHeader
from widgets.sweep_chart import SweepChart

PANELS = ("gpus", "server", "log", "sweep")
NARROW_WIDTH = 120  # below: the GPU panel over the server strip, both full width
SHORT_HEIGHT = 32  # below: a title rule per panel instead of a box
LOG_MIN_LINES = 8  # the log keeps this many lines before the GPU rows or the chart grow
GPU_CELL_MIN = 36  # the narrowest GPU row of the two-column layout
SWEEP_CHART_MIN = 7  # fewer rows than this: the sweep is a line of words, not a plot
# Of the rows below the top row, for the chart once a sweep runs or has points: the plot, and
# beside it the table of every step (the log keeps LOG_MIN_LINES).
SWEEP_SHARE = 0.5
DETAIL_ROWS = 5  # the log's detail pane (border + 4 lines), shown when the log has room
DETAIL_MIN_LINES = 14  # log lines that must remain beside the detail pane
SERVER_ROWS = 5  # four stats and the cuda-graph line
SERVER_DENSE_ROWS = 3  # two stats a line


@dataclass(frozen=True)
class DashLayout:
    """Rows per panel (chrome included; 0 = hidden) and how the GPU rows are laid out."""

    short: bool
    narrow: bool
    chrome: int  # rows of border a panel costs: 2 (box) or 1 (title rule)
    top: int | None  # the GPU+server row; None: it takes the rest (log and sweep hidden)
    gpus: int
    server: int
    sweep: int | None  # None: takes the rest (log hidden)
    gpu_columns: int
    gpu_rows: int | None  # terminal rows of GPU lines shown (more scroll); None: all
    gpu_header: bool  # the GPU panel's column-header row fits (else the rows keep that line)
    server_dense: bool
    server_scale: int  # rows per server sparkline (beside a tall GPU panel: 2 or 3)
    log_detail: bool


def plan_layout(
    width: int,
    height: int,
    *,
    gpus: int,
    gpu_row_height: int = 1,
    visible: frozenset[str] = frozenset(PANELS),
    sweep_data: bool = False,
    sweeping: bool = False,
) -> DashLayout:
    """Share `height` rows (header and footer included) among the visible panels."""
    short = height < SHORT_HEIGHT
    narrow = width < NARROW_WIDTH
    chrome = 1 if short else 2
    body = max(0, height - 2)
    show_gpus, show_server = "gpus" in visible, "server" in visible
    show_log, show_sweep = "log" in visible, "sweep" in visible
    stacked = narrow
    dense = narrow
    server_content = SERVER_DENSE_ROWS if dense else SERVER_ROWS
    server = chrome + server_content if show_server else 0

    log_need = chrome + 1 + LOG_MIN_LINES if show_log else 0
    sweep_need = chrome + 1 if show_sweep else 0
    # GPU panel: the summary line, then the GPU rows (1 or 3 rows each, 1 or 2 a line).
    # Side by side, its inner width is ~2/3 of the screen less borders and padding.
    inner = (width if stacked or not show_server else width * 2 // 3) - (2 if short else 4)
    count = max(1, gpus)

    def gpu_lines(columns: int, header: bool = False) -> int:
        # summary line (+ the column-header row over compact rows) + the rows
        return 1 + int(header) + math.ceil(count / columns) * gpu_row_height

    room = body - log_need - sweep_need - chrome - (server if stacked else 0)
    room = min(room, max(4, body * 3 // 5))  # never more than ~60% for the GPU panel
    columns = 1
    if (gpu_lines(1) > room and inner >= 2 * GPU_CELL_MIN + 2 and gpus > 1
            and gpu_row_height == 1):  # full rows (v) need the whole width
        columns = 2
    # The column-header row only on a tall screen and where every GPU row still fits under
    # it: a GPU (or a log line on a short screen) is worth more than the names of columns.
    header = not short and gpu_row_height == 1 and gpu_lines(columns, True) <= room
    content = max(2, min(gpu_lines(columns, header), room))
    gpu_rows = content - 1 - int(header) if content < gpu_lines(columns, header) else None
    gpus_h = chrome + content if show_gpus else 0
    if not show_log and not show_sweep:
        top: int | None = None  # the top row fills the screen; the GPU rows need no cap
        gpu_rows = None
    elif stacked:
        top = gpus_h + server
    else:
        top = max(gpus_h, server)
    rest = body - (top or 0)

    sweep: int | None = 0
    if show_sweep:
        spare = rest - log_need - chrome
        rows = 1
        if not show_log:
            sweep = None
        else:
            if (sweep_data or sweeping) and spare >= SWEEP_CHART_MIN:
                share = int((rest - 2 * chrome) * SWEEP_SHARE)
                rows = max(SWEEP_CHART_MIN, min(share, spare))
            sweep = chrome + rows
    log_rows = rest - (sweep or 0) - chrome - 1
    scale = 1
    if not stacked and not dense and top is not None and show_gpus:
        scale = max(1, min(3, (top - chrome - 1) // 4))  # the box is as tall as the GPUs'
    return DashLayout(
        short=short, narrow=narrow, chrome=chrome, top=top, gpus=gpus_h, server=server,
        sweep=sweep, gpu_columns=columns, gpu_rows=gpu_rows, gpu_header=header,
        server_dense=dense,
        server_scale=scale, log_detail=log_rows - DETAIL_ROWS >= DETAIL_MIN_LINES,
    )


_TITLES = {"gpus": "GPUs", "server": "Server", "log": "Log", "sweep": "Sweep"}


class Panel(Vertical):
    """A bordered, focusable, maximisable panel."""

    ALLOW_MAXIMIZE = True
    can_focus = False


# The log's own keys (widgets/log_view.py) that no other dashboard panel binds: with the focus
# on the GPU panel or the chart they still act on the log, or say why they cannot (issue 26.7).
LOG_KEYS = {
    "l": "cycle_severity", "R": "cycle_rank", "w": "toggle_wrap", "n": "search_next",
    "N": "search_prev", "o": "toggle_own",
}

_KEY_OF_LOG_ACTION = {action: key for key, action in LOG_KEYS.items()}


class DashboardScreen(FreshScreen):
    shows_every_host: ClassVar[bool] = False
    BINDINGS = [
        Binding(key, f"log_key('{action}')", show=False, id=f"dashboard-log-{action}")
        for key, action in LOG_KEYS.items()
    ]

    def compose(self) -> ComposeResult:
        app = console_app(self)
        ui = app.ui
        yield PlateauHeader(ascii_only=ui.ascii, id="header")
        with Horizontal(id="top-row"):
            with Panel(id="gpus", classes="panel") as gpus:
                gpus.border_title = "GPUs"
                yield panels.gpu_widget(ui)
            with Panel(id="server", classes="panel") as server:
                server.border_title = "Server"
                yield panels.server_widget(ui.ascii)
        with Panel(id="log", classes="panel") as log:
            log.border_title = "Log"
            yield panels.log_widget(ui.log_max_lines)
        with Panel(id="sweep", classes="panel") as sweep:
            sweep.border_title = "Sweep"
            yield panels.sweep_widget(ui.ascii)
        yield PlateauFooter()

    def on_mount(self) -> None:
        self._views: dict[str, Any] = {
            "gpus": self.query_one("#gpu-view"),
            "server": self.query_one("#server-view"),
            "log": self.query_one("#log-view"),
            "sweep": self.query_one("#sweep-view"),
        }
        self._rendered_host: str | None = None
        self._log_seen = 0
        self._gpu_seen = 0  # samples the current GPU panel has been given (state.gpu_total)
        self._gpu_count = 0
        self._sweep_data = False
        self._sweeping = False
        self._layout: DashLayout | None = None
        self._watch_gpu_view(self._views["gpus"])
        app = console_app(self)
        for name in app.hidden_panels:
            self.query_one(f"#{name}").display = False
        self._apply_layout()
        self.render_host(app.active_state, None)

    def on_resize(self, event: events.Resize) -> None:
        del event
        self._apply_layout()

    def watch_maximized(self) -> None:
        if getattr(self, "_views", None) is not None:
            self._apply_layout()

    # -- layout -------------------------------------------------------------------------------

    def _watch_gpu_view(self, view: Widget) -> None:
        # `v` switches GPU rows between one and three lines: the plan changes with it.
        if hasattr(view, "compact"):
            self.watch(view, "compact", lambda _compact: self._apply_layout(), init=False)

    def _apply_layout(self) -> None:
        """Give every panel its rows for the current size, GPU count and visible panels."""
        width, height = self.size
        if width == 0 or height == 0:
            return
        visible = frozenset(p for p in PANELS if self.query_one(f"#{p}").display)
        gpu_view = self._views["gpus"]
        plan = plan_layout(
            width, height, gpus=self._gpu_count,
            gpu_row_height=1 if getattr(gpu_view, "compact", True) else 3,
            visible=visible, sweep_data=self._sweep_data, sweeping=self._sweeping,
        )
        self.set_class(plan.narrow, "-narrow")
        self.set_class(plan.short, "-short")
        top, gpus, server = (self.query_one(f"#{n}") for n in ("top-row", "gpus", "server"))
        sweep, log = self.query_one("#sweep"), self.query_one("#log")
        maximized = self.maximized
        if isinstance(maximized, Panel):
            # Zoomed: the panel fills the screen and its content is not capped.
            maximized.styles.height = "1fr"
            rows = 1 + self._gpu_count * (1 if getattr(gpu_view, "compact", True) else 3)
            two = rows > height - 4 and width - 4 >= 2 * GPU_CELL_MIN + 2
            self._fit_gpus(2 if two else 1, None, rows + 1 <= height - 4)
            self._set_detail(True)
            self._layout = None  # back from the zoom: every panel is set again
            return
        top.styles.height = "1fr" if plan.top is None else plan.top
        if plan.narrow:
            gpus.styles.height = "1fr" if plan.top is None else (plan.gpus or None)
            server.styles.height = plan.server or None
        else:
            gpus.styles.height = "100%"
            server.styles.height = "100%"
        sweep.styles.height = "1fr" if plan.sweep is None else (plan.sweep or None)
        log.styles.height = "1fr"
        server_view = self._views["server"]
        server_view.set_class(plan.server_dense, "-dense")
        server_view.set_class(plan.server_scale == 2, "-tall-2")
        server_view.set_class(plan.server_scale == 3, "-tall-3")
        self.query_one(PlateauFooter).compact = plan.narrow
        # A title rule has no corner to space the title from: pad it ourselves.
        for panel in (gpus, server, log, sweep):
            name = _TITLES[panel.id or ""]
            if not plan.short:
                panel.border_title = name
            elif panel is server and not plan.narrow:
                panel.border_title = f"{name} "  # its left rule gives it a corner
            else:
                panel.border_title = f" {name} "
        self._fit_gpus(plan.gpu_columns, plan.gpu_rows, plan.gpu_header)
        if self._layout is None or plan.log_detail != self._layout.log_detail:
            # Only when the room changes: an operator's own enter (details) stays put.
            self._set_detail(plan.log_detail)
        self._layout = plan

    def _fit_gpus(self, columns: int, max_rows: int | None, header: bool) -> None:
        fit = getattr(self._views["gpus"], "fit", None)
        if callable(fit):
            fit(columns=columns, max_rows=max_rows, header=header)

    def _set_detail(self, visible: bool) -> None:
        show = getattr(self._views["log"], "show_detail", None)
        if callable(show):
            show(visible)

    def _note_shape(self, state: HostState) -> None:
        """Re-plan when what the plan depends on changes: GPU count, sweep data or not."""
        sample = state.gpu_sample
        count = len(sample.gpus) if sample is not None else 0
        data = bool(state.sweep.points) or chart_runs(state) is not None
        sweeping = state.sweep.running or (state.ab is not None and state.ab.running)
        if (count, data, sweeping) != (self._gpu_count, self._sweep_data, self._sweeping):
            self._gpu_count, self._sweep_data, self._sweeping = count, data, sweeping
            self._apply_layout()

    # -- rendering ----------------------------------------------------------------------------

    def render_host(self, state: HostState | None, aspects: tuple[str, ...] | None) -> None:
        """Bring the panels up to date with `state`; `aspects=None` redraws everything."""
        if state is None:
            return
        app = console_app(self)
        switched = self._rendered_host is not None and state.host != self._rendered_host
        full = aspects is None or switched
        if switched:
            self._replace_gpu_view(state.host)
        with app.batch_update():
            self._note_shape(state)
            self.query_one(PlateauHeader).show(app.header_info(state))
            if full or {"gpus", "topology"} & set(aspects):  # type: ignore[arg-type]
                missed = min(state.gpu_total - self._gpu_seen, len(state.gpu_samples))
                unseen = list(state.gpu_samples)[len(state.gpu_samples) - missed :]
                panels.show_gpus(self._views["gpus"], state.gpu_header, unseen,
                                 state.gpu_error)
                self._gpu_seen = state.gpu_total
            if full or "stats" in aspects:  # type: ignore[operator]
                panels.show_stats(self._views["server"], state.server_stats)
            if full:
                panels.reset_log(self._views["log"], list(state.log))
                self._log_seen = state.log_total
            elif "log" in aspects:  # type: ignore[operator]
                new = state.log_total - self._log_seen
                if new > 0:
                    fresh = list(state.log)[-min(new, len(state.log)) :]
                    panels.append_log(self._views["log"], fresh)
                self._log_seen = state.log_total
            if full or "sweep" in aspects:  # type: ignore[operator]
                panels.show_sweep(
                    self._views["sweep"], state.sweep.points,
                    progress_line(state, app.ab_plans.get(state.host)) or
                    sweep_line(state), chart_runs(state), series_label(state),
                )
        self._rendered_host = state.host

    def _replace_gpu_view(self, host: str) -> None:
        # GPU histories belong to one host: a fresh panel instead of mixing two hosts' series.
        app = console_app(self)
        old = self._views["gpus"]
        self._gpu_views = getattr(self, "_gpu_views", 0) + 1
        new = panels.gpu_widget(app.ui, id=f"gpu-view-{self._gpu_views}")
        self.query_one("#gpus", Panel).mount(new, after=old)
        old.remove()
        self._views["gpus"] = new
        self._gpu_seen = 0  # the new panel gets the host's whole recent history
        self._watch_gpu_view(new)
        self._layout = None
        self._apply_layout()

    def refresh_header(self, state: HostState | None) -> None:
        # query, not query_one: at exit the clock can tick after the children were removed.
        headers = self.query(PlateauHeader)
        if state is not None and headers:
            headers.first().show(console_app(self).header_info(state))

    # -- panel control ------------------------------------------------------------------------

    def toggle_panel(self, name: str) -> bool:
        panel = self.query_one(f"#{name}")
        panel.display = not panel.display
        if self.maximized is not None and not panel.display:
            self.minimize()
        self._apply_layout()
        return bool(panel.display)

    def toggle_maximize(self) -> str | None:
        if self.maximized is not None:
            self.minimize()
            return None
        target = self._focused_panel() or self.query_one("#log", Panel)
        self.maximize(target, container=False)
        return target.id

    def _focused_panel(self) -> Panel | None:
        node = self.focused
        while node is not None:
            if isinstance(node, Panel):
                return node
            node = node.parent  # type: ignore[assignment]
        return None

    @property
    def gpu_view(self) -> Widget:
        return self._views["gpus"]  # type: ignore[no-any-return]

    @property
    def sweep_view(self) -> SweepChart:
        return self._views["sweep"]  # type: ignore[no-any-return]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A log key the config's [keymap] gave to a console action is that action's."""
        if action == "log_key" and parameters:
            key = _KEY_OF_LOG_ACTION.get(str(parameters[0]))
            taken = {k.strip() for keys in console_app(self).effective_keys().values()
                     for k in keys.split(",")}
            if key in taken:
                return False
        return True

    def action_log_key(self, action: str) -> None:
        """A log key pressed with the focus elsewhere: act on the log, or say why not."""
        panel = self.query_one("#log", Panel)
        why = None
        if not panel.display:
            why = "the log is hidden (3 shows it)"
        elif self.maximized is not None and self.maximized is not panel:
            why = "another panel is zoomed (z restores)"
        if why is not None:
            self.notify(f"log key: {why}", severity="warning", markup=False, timeout=3)
            return
        method = getattr(self._views["log"], f"action_{action}", None)
        if callable(method):
            method()

    def focus_log(self) -> Any:
        view = self._views["log"]
        for method in ("action_start_filter", "focus_filter"):
            fn = getattr(view, method, None)
            if callable(fn):
                fn()
                return view
        view.focus()
        return view


def series_label(state: HostState) -> str:
    """The single sweep series' legend: "live" while it runs, the run once it ended (a
    finished sweep's chart said "A: live"; issue 26.11)."""
    run_id = state.sweep.run_id
    if state.sweep.running or not run_id:
        return "live"
    return run_id if run_id.startswith("run") else f"run {run_id}"


def chart_runs(state: HostState) -> list[tuple[str, list[Any]]] | None:
    """The A/B overlay (A and B series, every repeat, so the chart draws their spread) while
    an A/B runs or after it; the last complete sweep next to a running one, or instead of one
    that was cancelled or failed; else None (the live sweep alone)."""
    ab = state.ab
    current = state.sweep.run_id
    if ab is not None:
        owned = ab.owns(current)
        if ab.running:
            runs: list[tuple[str, list[Any]]] = [(ab.name_a, list(ab.steps_a))]
            if ab.steps_b or ab.side == "B":
                runs.append((ab.name_b, list(ab.steps_b)))
            return runs
        if ab.result is not None and (current is None or owned):
            return [(ab.name_a, list(ab.result.steps_a)), (ab.name_b, list(ab.result.steps_b))]
    last = state.last_complete
    if last is None or last.run_id == current:
        return None
    kept = (f"run {last.run_id} (last complete)", list(last.points))
    if state.sweep.running:
        return [kept, (f"run {current} (running)", list(state.sweep.points))]
    if state.sweep.last_ok is False:
        return [kept]
    return None
