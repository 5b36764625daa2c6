"""The dashboard: header, GPU panel | server strip, log, sweep chart, footer.

Layout classes follow the terminal size so 80x24 stays usable: `-narrow` stacks the GPU panel
over the server strip, `-short` shrinks the sweep chart to a summary. Panels are toggled with
1-4 and maximised with `m`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer

from console.app import panels
from console.session.state import HostState
from widgets.header import PlateauHeader

if TYPE_CHECKING:
    from console.app.app import PlateauApp

PANELS = ("gpus", "server", "log", "sweep")
NARROW_WIDTH = 120
SHORT_HEIGHT = 36


class Panel(Vertical):
    """A bordered, focusable, maximisable panel."""

    ALLOW_MAXIMIZE = True
    can_focus = False


class DashboardScreen(Screen[None]):
    def compose(self) -> ComposeResult:
        app: PlateauApp = self.app  # type: ignore[assignment]
        ui = app.config.ui
        yield PlateauHeader(ascii_only=ui.ascii, id="header")
        with Horizontal(id="top-row"):
            with Panel(id="gpus", classes="panel") as gpus:
                gpus.border_title = "GPUs"
                yield panels.gpu_widget(ui.ascii)
            with Panel(id="server", classes="panel") as server:
                server.border_title = "Server"
                yield panels.server_widget(ui.ascii)
        with Panel(id="log", classes="panel") as log:
            log.border_title = "Log"
            yield panels.log_widget(ui.log_max_lines)
        with Panel(id="sweep", classes="panel") as sweep:
            sweep.border_title = "Sweep"
            yield panels.sweep_widget(ui.ascii)
        yield Footer()

    def on_mount(self) -> None:
        self._views: dict[str, Any] = {
            "gpus": self.query_one("#gpu-view"),
            "server": self.query_one("#server-view"),
            "log": self.query_one("#log-view"),
            "sweep": self.query_one("#sweep-view"),
        }
        self._rendered_host: str | None = None
        self._log_seen = 0
        self._apply_size(self.size.width, self.size.height)
        app: PlateauApp = self.app  # type: ignore[assignment]
        for name in app.hidden_panels:
            self.query_one(f"#{name}").display = False
        self.render_host(app.active_state, None)

    def on_resize(self, event: events.Resize) -> None:
        self._apply_size(event.size.width, event.size.height)

    def _apply_size(self, width: int, height: int) -> None:
        self.set_class(width < NARROW_WIDTH, "-narrow")
        self.set_class(height < SHORT_HEIGHT, "-short")

    # -- rendering ----------------------------------------------------------------------------

    def render_host(self, state: HostState | None, aspects: tuple[str, ...] | None) -> None:
        """Bring the panels up to date with `state`; `aspects=None` redraws everything."""
        if state is None:
            return
        app: PlateauApp = self.app  # type: ignore[assignment]
        switched = self._rendered_host is not None and state.host != self._rendered_host
        full = aspects is None or switched
        if switched:
            self._replace_gpu_view(state.host)
        with app.batch_update():
            self.query_one(PlateauHeader).show(app.header_info(state))
            if full or {"gpus", "topology"} & set(aspects):  # type: ignore[arg-type]
                panels.show_gpus(self._views["gpus"], state.gpu_header, state.gpu_sample)
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
                    self._views["sweep"], state.sweep.points, progress_line(state) or
                    sweep_line(state), chart_runs(state),
                )
        self._rendered_host = state.host

    def _replace_gpu_view(self, host: str) -> None:
        # GPU histories belong to one host: a fresh panel instead of mixing two hosts' series.
        app: PlateauApp = self.app  # type: ignore[assignment]
        old = self._views["gpus"]
        self._gpu_views = getattr(self, "_gpu_views", 0) + 1
        new = panels.gpu_widget(app.config.ui.ascii, id=f"gpu-view-{self._gpu_views}")
        self.query_one("#gpus", Panel).mount(new, after=old)
        old.remove()
        self._views["gpus"] = new

    def refresh_header(self, state: HostState | None) -> None:
        if state is not None:
            app: PlateauApp = self.app  # type: ignore[assignment]
            self.query_one(PlateauHeader).show(app.header_info(state))

    # -- panel control ------------------------------------------------------------------------

    def toggle_panel(self, name: str) -> bool:
        panel = self.query_one(f"#{name}")
        panel.display = not panel.display
        if self.maximized is not None and not panel.display:
            self.minimize()
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

    def focus_log(self) -> Any:
        view = self._views["log"]
        for method in ("action_start_filter", "focus_filter"):
            fn = getattr(view, method, None)
            if callable(fn):
                fn()
                return view
        view.focus()
        return view


def sweep_line(state: HostState) -> str:
    sweep = state.sweep
    if sweep.running:
        conc = f" c={sweep.concurrency}" if sweep.concurrency is not None else ""
        return f"sweep running: step {sweep.step}/{sweep.total}{conc}"
    if sweep.run_id is not None and sweep.last_ok is False:
        return f"sweep {sweep.run_id} failed: {sweep.detail}"
    if sweep.run_id is not None:
        return f"sweep {sweep.run_id}: {len(sweep.points)} step(s)"
    return ""


def progress_line(state: HostState) -> str:
    """What the host is busy with (header): the A/B stage and/or the sweep step."""
    parts = []
    ab = state.ab
    if ab is not None and ab.running:
        parts.append(f"A/B {ab.name_a} vs {ab.name_b}: {ab.stage}")
    if state.sweep.running:
        parts.append(sweep_line(state))
    return " · ".join(parts)


def chart_runs(state: HostState) -> list[tuple[str, list[Any]]] | None:
    """The A/B overlay (A and B series) while an A/B runs or after it, else None (the live
    sweep alone)."""
    ab = state.ab
    if ab is None:
        return None
    current = state.sweep.run_id
    owned = ab.owns(current)
    if ab.running:
        a_points = ab.steps_a or (list(state.sweep.points) if owned else [])
        runs: list[tuple[str, list[Any]]] = [(ab.name_a, a_points)]
        if ab.stage in ("sweep-b", "compare") and ab.steps_a:
            runs.append((ab.name_b, list(state.sweep.points) if owned else []))
        return runs
    if ab.result is not None and (current is None or owned):
        return [(ab.name_a, list(ab.result.steps_a)), (ab.name_b, list(ab.result.steps_b))]
    return None
