"""Screens reached from the dashboard: events, config, history, compare, topology, why."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.coordinate import Coordinate
from textual.widgets import DataTable, Static

from console.app import views_data
from console.app.contract import console_app
from console.app.footer import PlateauFooter
from console.app.messages import RunMarkToggled, SuggestionABRequested
from console.app.screens.fresh import FreshScreen
from console.app.screens.run import RunScreen, events_during
from console.bench.compare import Comparison
from console.bench.verdict import Verdict
from console.diagnose.models import Diagnosis
from console.session.state import HostState
from console.store.models import RunRecord
from widgets.compare_table import CompareTable, comparison_cells
from widgets.event_log import EventLogTable
from widgets.header import PlateauHeader
from widgets.split_table import SplitTables
from widgets.table_fill import fill_table
from widgets.topology_view import TopologyView
from widgets.why_view import MAX_CAUSES, WhyView

if TYPE_CHECKING:
    from console.diagnose.log_diagnosis import LogDiagnosis


class HostScreen(FreshScreen):
    """A screen with the host header on top and the footer below."""

    TITLE_TEXT = ""
    shows_every_host: ClassVar[bool] = False
    # Escape goes back to the dashboard from every full-screen view (issue 26.7); `d` too.
    BINDINGS = [Binding("escape", "app.show('dashboard')", "Back", id="view-back")]

    def compose(self) -> ComposeResult:
        app = console_app(self)
        yield PlateauHeader(ascii_only=app.ui.ascii, id="header")
        yield Static(Content.styled(self.TITLE_TEXT, "bold $accent"), classes="screen-title")
        yield from self.compose_body()
        yield PlateauFooter()

    def compose_body(self) -> ComposeResult:
        yield from ()

    def on_mount(self) -> None:
        app = console_app(self)
        self.render_host(app.active_state, None)

    def on_screen_resume(self) -> None:
        app = console_app(self)
        self.render_host(app.active_state, None)

    def render_host(self, state: HostState | None, aspects: tuple[str, ...] | None) -> None:
        if state is None:
            return
        if self._show_header(state):
            self.render_body(state, aspects)

    def refresh_header(self, state: HostState | None) -> None:
        self._show_header(state)

    def _show_header(self, state: HostState | None) -> bool:
        """Show the state in this screen's header; False when the screen has no header (yet
        or any more): a timer can tick while the screen mounts or, at exit, after its
        children were removed but before the screen itself was."""
        headers = self.query(PlateauHeader)
        if state is None or not headers:
            return False
        headers.first().show(console_app(self).header_info(state))
        return True

    def render_body(self, state: HostState, aspects: tuple[str, ...] | None) -> None:
        pass


class EventsScreen(HostScreen):
    TITLE_TEXT = "Event log — all hosts (newest last)"
    shows_every_host: ClassVar[bool] = True
    """Every host's news is rendered here, not only the active host's (PlateauApp)."""

    def compose_body(self) -> ComposeResult:
        yield EventLogTable(id="event-table")

    def render_body(self, state: HostState, aspects: tuple[str, ...] | None) -> None:
        if aspects is not None and "events" not in aspects:
            return
        app = console_app(self)
        self.query_one(EventLogTable).show(app.all_events())


class ConfigScreen(HostScreen):
    TITLE_TEXT = "Effective config (secrets redacted) and where each value came from"

    def compose_body(self) -> ComposeResult:
        yield DataTable(id="config-table", cursor_type="row", zebra_stripes=True)

    def render_body(self, state: HostState, aspects: tuple[str, ...] | None) -> None:
        if aspects is None:
            self._fill()

    def on_resize(self) -> None:
        self.call_after_refresh(self._fill)  # once the table has its new width

    def _fill(self) -> None:
        app = console_app(self)
        rows = [
            [Text(key), Text(value), Text(source, style="dim")]
            for key, value, source in views_data.config_rows(app.loaded)
        ]
        table = self.query_one(DataTable)
        # Every column in view: long keys, values and sources wrap (the source was "sourc").
        fill_table(table, ("key", "value", "source"), rows,
                   room=table.scrollable_content_region.width, wrap=(0, 1, 2))


def _write_report(screen: HostScreen, runs: list[int]) -> None:
    """`plateau report --html` for these runs, off the UI thread; the path is notified."""
    store_path = console_app(screen).store_path

    def write() -> None:
        said = views_data.write_report(store_path, runs)
        screen.app.call_from_thread(screen.notify, said, markup=False, timeout=8)

    screen.run_worker(write, thread=True, group="report", exit_on_error=False)


class HistoryScreen(HostScreen):
    """Stored runs, newest first. enter opens a run; m marks it (two marked runs are what
    compare shows, even a cancelled one); incomplete runs are marked in their status."""

    TITLE_TEXT = "Sweep history"
    BINDINGS = [
        Binding("enter", "open_run", "Open run", id="history-open"),
        Binding("m", "mark_run", "Mark", id="history-mark"),
        Binding("x", "report_run", "HTML report", show=False, id="history-report"),
    ]

    def compose_body(self) -> ComposeResult:
        yield DataTable(id="history-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="history-note")

    def render_body(self, state: HostState, aspects: tuple[str, ...] | None) -> None:
        if aspects is not None and not {"sweep", "marks"} & set(aspects):
            return
        self._load(state.host)

    @work(thread=True, exclusive=True, group="history", exit_on_error=False)
    def _load(self, host: str) -> None:
        app = console_app(self)
        rows, note = views_data.history_rows(app.store_path, host, app.active_state,
                                             app.marked_runs)
        self.app.call_from_thread(self._show, rows, note)

    def _show(self, rows: list[tuple[str, ...]], note: str) -> None:
        table = self.query_one(DataTable)
        cursor = table.cursor_row
        fill_table(
            table, views_data.HISTORY_COLUMNS,
            [[Text(cell) for cell in row] for row in rows],
            row_keys=[row[1] for row in rows],
        )
        if rows:
            table.move_cursor(row=min(cursor, len(rows) - 1))
        self.query_one("#history-note", Static).update(Content(note))

    def _selected(self) -> int | None:
        table = self.query_one(DataTable)
        if table.row_count == 0:
            return None
        key = table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value
        return int(key) if key and key.isdigit() else None

    def on_data_table_row_selected(self) -> None:
        self.action_open_run()

    def action_mark_run(self) -> None:
        run_id = self._selected()
        if run_id is None:
            return
        self.post_message(RunMarkToggled(run_id))  # the app marks it and renders "marks"

    def action_report_run(self) -> None:
        """The selected run's HTML report (with its A/B partner when it has one); two marked
        runs are reported as an A/B."""
        app = console_app(self)
        marked = list(app.marked_runs)
        selected = self._selected()
        runs = marked if len(marked) == 2 else ([selected] if selected is not None else [])
        if runs:
            _write_report(self, runs)

    def action_open_run(self) -> None:
        run_id = self._selected()
        if run_id is not None:
            self._open(run_id)

    @work(thread=True, exclusive=True, group="history-open", exit_on_error=False)
    def _open(self, run_id: int) -> None:
        app = console_app(self)
        opened = views_data.open_run(app.store_path, run_id)
        if opened is not None:
            run, diagnosis, pair = opened
            events = events_during(list(app.active_state.events), run)
            self.app.call_from_thread(self.app.push_screen,
                                      RunScreen(run, events, diagnosis, pair))


class CompareScreen(HostScreen):
    TITLE_TEXT = "Compare: the two newest complete runs of this host (B vs A)"

    def compose_body(self) -> ComposeResult:
        # As many tables as the width needs, conc in each: no metric cut at the edge.
        yield SplitTables("compare-table", lambda table_id: CompareTable(id=table_id),
                          id="compare-tables")
        yield Static("", id="compare-note")

    def render_body(self, state: HostState, aspects: tuple[str, ...] | None) -> None:
        if aspects is not None and "sweep" not in aspects:
            return
        ab = state.ab
        if ab is not None and ab.result is not None and not ab.running:
            # The newest A/B of this host: its own comparison, with the noise note.
            result = ab.result
            how = f"{result.repeats} repeat(s)" + (", interleaved" if result.interleave else "")
            lines = [f"A/B ({ab.preset}, {how}): A = {result.name_a}, B = {result.name_b}",
                     f"verdict: {result.verdict.sentence}", *_energy(result.verdict),
                     views_data.flags_line(list(result.flags)), *result.verdict.notes]
            self._title("Compare: the newest A/B of this host (B vs A)")
            self._show_comparison(result.comparison, "\n".join(lines), result.verdict)
            return
        self._title(self.TITLE_TEXT)
        self._load(state.host)

    def _title(self, text: str) -> None:
        self.query_one(".screen-title", Static).update(Content.styled(text, "bold $accent"))

    @work(thread=True, exclusive=True, group="compare", exit_on_error=False)
    def _load(self, host: str) -> None:
        app = console_app(self)
        marked = (app.marked_runs[0], app.marked_runs[1]) if len(app.marked_runs) == 2 else None
        pair = views_data.latest_two_runs(app.store_path, host, marked)
        if pair is None:
            note = ("need two complete runs of this host to compare (cancelled and failed runs "
                    "are not picked; mark two in history with m to compare those)")
            self.app.call_from_thread(self._show_comparison, None, note)
            return
        comparison, verdict, flags, note = views_data.judged(*pair)
        if marked:
            self.app.call_from_thread(self._title, "Compare: the two runs marked in history")
        lines = [note, f"verdict: {verdict.sentence}", *_energy(verdict),
                 views_data.flags_line(flags), *verdict.notes]
        self.app.call_from_thread(self._show_comparison, comparison, "\n".join(lines), verdict)

    def _show_comparison(
        self, comparison: Comparison | None, note: str, verdict: Verdict | None = None
    ) -> None:
        tables = self.query_one("#compare-tables", SplitTables)
        if comparison is None:
            tables.clear()
        else:
            keys, labels, rows, groups = comparison_cells(comparison, verdict)
            tables.show(labels, rows, keys=1, groups=groups, column_keys=keys,
                        row_keys=[str(row.concurrency) for row in comparison.rows])
        self.query_one("#compare-note", Static).update(Content(note))


class TopologyScreen(HostScreen):
    TITLE_TEXT = "GPU topology"

    def compose_body(self) -> ComposeResult:
        yield TopologyView(id="topology-view")

    def render_body(self, state: HostState, aspects: tuple[str, ...] | None) -> None:
        if aspects is not None and "topology" not in aspects:
            return
        if state.gpu_header is not None:  # until then the view says it has none yet
            self.query_one("#topology-view", TopologyView).update_topology(state.gpu_header)


class WhyScreen(HostScreen):
    """Why the newest run of this host plateaued: causes, evidence, and a key per suggestion
    that opens an A/B with that change as B."""

    TITLE_TEXT = "Why it plateaus: the newest run of this host"
    BINDINGS = [
        *(Binding(str(n), f"suggest({n})", f"A/B #{n}", show=False, id=f"why-ab-{n}")
          for n in range(1, MAX_CAUSES + 1)),
        Binding("x", "report_run", "HTML report", show=False, id="why-report"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.diagnosis: Diagnosis | None = None
        self.run: RunRecord | None = None

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="why-scroll"):
            yield WhyView("", id="why-view")

    def render_body(self, state: HostState, aspects: tuple[str, ...] | None) -> None:
        if aspects is not None and "sweep" not in aspects:
            return
        effective = [r.text() for r in state.effective]
        log = console_app(self).sessions[state.host].log_diagnosis
        if log is not None:  # `plateau --log FILE`: the file's diagnosis, not the run store's
            self._show_log(log, effective)
            return
        self._load(state.host, effective)

    def _show_log(self, log: LogDiagnosis, effective: list[str]) -> None:
        from console.diagnose.log_diagnosis import log_diagnosis_lines

        note = log_diagnosis_lines(log)[0]
        lacked = [f"{cause}: {'; '.join(items)}" for cause, items in log.lacking.items()
                  if items and any(c.id == cause for c in log.diagnosis.causes)]
        if lacked:
            note += "\nlacked: " + "\nlacked: ".join(lacked)
        crash = log.crash.sentence() if log.crash is not None else ""
        # The file's own reading (after a failed capture it holds no graph size), not the
        # header's.
        self._show(log.diagnosis, None, note, log.effective, crash)

    @work(thread=True, exclusive=True, group="why", exit_on_error=False)
    def _load(self, host: str, effective: list[str]) -> None:
        app = console_app(self)
        diagnosis, run, note = views_data.latest_diagnosis(app.store_path, host)
        crash = views_data.crash_sentence(run)
        self.app.call_from_thread(self._show, diagnosis, run, note, effective, crash)

    def _show(self, diagnosis: Diagnosis | None, run: RunRecord | None, note: str,
              effective: list[str] | None = None, crash: str = "") -> None:
        self.diagnosis, self.run = diagnosis, run
        self.query_one("#why-view", WhyView).show(diagnosis, note, effective or [], crash)

    def action_report_run(self) -> None:
        run_id = getattr(getattr(self.run, "summary", None), "id", None)
        if isinstance(run_id, int):
            _write_report(self, [run_id])

    def action_suggest(self, rank: int) -> None:
        causes = self.diagnosis.causes if self.diagnosis is not None else []
        if self.diagnosis is None or rank > len(causes):
            self.notify(f"no cause #{rank}", markup=False, timeout=3)
            return
        from console.app.suggest_ab import plan_cause_ab

        cause = causes[rank - 1]
        plan = plan_cause_ab(cause, self.diagnosis.knee, self.run)
        profile = self.run.summary.meta.profile if self.run is not None else None
        self.post_message(SuggestionABRequested(cause, profile, plan))


def _energy(verdict: Verdict) -> list[str]:
    """"energy: B: +31.0% throughput, -18.0% J/token at 64" when both sides sampled power."""
    return [f"energy: {verdict.efficiency}"] if verdict.efficiency else []
