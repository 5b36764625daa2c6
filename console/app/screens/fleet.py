"""The fleet overview: one row per configured host (console.fleet's HostSummary), sorted and
filtered; enter opens the host's dashboard. The first screen when two or more hosts are
configured; `F` from anywhere.

Rows are redrawn from the sessions' states once a second (text no faster than it can be read),
not per event: 64 hosts' events would otherwise be 64 streams of redraws. The run history
(last sweep, its causes) is read in a thread every few seconds, never on the UI's time.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.widgets import Input, Static

from console.app.contract import console_app
from console.app.footer import PlateauFooter
from console.app.screens.fresh import FreshScreen
from console.fleet.models import HostSummary
from console.fleet.summary import LastRun, summarize
from console.session.state import HostState
from widgets.fleet_rows import level
from widgets.fleet_table import FleetTable

REFRESH_S = 1.0
COALESCE_S = 0.25
"""A host's news redraws the rows this soon (text no faster than 4 Hz)..."""
GAP_PER_HOST_S = 0.015
"""...and, past a few hosts, no sooner than this per host after the last redraw (at most
REFRESH_S): a redraw's work grows with the rows, and 64 hosts always have news."""
AGE_STEP_S = 5
"""A row with no news is summarised again this often (its uptime and sample age move)."""
HISTORY_S = 10.0


class FleetScreen(FreshScreen):
    """A HostView (console.app.contract) of every host at once."""

    shows_every_host: ClassVar[bool] = True
    """Every host's news reaches render_host (PlateauApp), not only the active host's."""
    footer_own_keys_first = True
    DEFAULT_CSS = """
    FleetScreen #fleet-columns { height: auto; color: $foreground-muted; padding: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("o", "sort", "Sort", id="fleet-sort"),
        Binding("O", "reverse", "Reverse sort", show=False, id="fleet-reverse"),
        Binding("slash", "filter", "Filter", id="fleet-filter", key_display="/"),
        Binding("escape", "back", "Back", id="fleet-back"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.history: dict[str, LastRun] = {}
        self.summaries: list[HostSummary] = []
        self._pending = False
        self._refreshed_at = 0.0
        self._summary_cache: dict[str, tuple[tuple[object, ...], HostSummary]] = {}

    def compose(self) -> ComposeResult:
        app = console_app(self)
        yield Static("", id="fleet-title", classes="screen-title")
        yield Input(placeholder="filter: host, state, profile, version, alert, cause",
                    id="fleet-filter")
        yield Static("", id="fleet-columns")
        yield FleetTable(ascii_only=app.ui.ascii, id="fleet-table")
        yield Static("", id="fleet-detail")
        yield PlateauFooter()

    def on_mount(self) -> None:
        self.query_one("#fleet-filter", Input).display = False
        self.refresh_rows()
        # Laid out, the table knows its rows on screen: the others sample slower from the
        # start (before their sessions connect, so no agent is started twice).
        self.call_after_refresh(self.refresh_rows)
        self.query_one(FleetTable).focus()
        self.set_interval(REFRESH_S, self._tick)
        if console_app(self).store_path is not None:
            self._read_history()
            self.set_interval(HISTORY_S, self._read_history)

    def _tick(self) -> None:
        """The once-a-second redraw, unless news redrew the rows just now."""
        if time.monotonic() - self._refreshed_at >= REFRESH_S * 0.9:
            self.refresh_rows()

    def on_screen_resume(self) -> None:
        self.refresh_rows()

    def on_screen_suspend(self) -> None:
        """Another screen shows the active host alone: the rows' hosts sample slower."""
        app = console_app(self)
        app.set_on_screen_hosts([app.active_host])

    # -- rows ------------------------------------------------------------------------------

    def render_host(self, _state: object, _aspects: tuple[str, ...] | None) -> None:
        """Some host has news: redraw the rows soon, once for all the news until then."""
        if not self._pending:
            self._pending = True
            gap = min(REFRESH_S, GAP_PER_HOST_S * len(console_app(self).sessions))
            since = time.monotonic() - self._refreshed_at
            self.set_timer(max(COALESCE_S, gap - since), self._flush)

    def refresh_header(self, _state: object) -> None:
        """No host header here: the rows refresh on their own interval."""

    def _flush(self) -> None:
        self._pending = False
        self.refresh_rows()

    def refresh_rows(self) -> None:
        if not self.is_current or not self.query(FleetTable):
            # Behind another screen (its timers still fire) or being torn down (the app
            # exits): nothing to show, and the pace is that screen's.
            return
        app = console_app(self)
        now = app.clock()
        self._refreshed_at = time.monotonic()
        self.summaries = [self._summary(name, session.state, now)
                          for name, session in app.sessions.items()]
        table = self.query_one(FleetTable)
        table.show(self.summaries)
        self._show_title(table)
        self._show_detail(table)
        self._update_pace()

    def _summary(self, name: str, state: HostState, now: datetime) -> HostSummary:
        """The host's summary, made again only when its state or last run changed, or its
        time-dependent figures (uptime, sample age) are AGE_STEP_S old: most rows of a fleet
        have no news in most refreshes."""
        last_run = self.history.get(name)
        # the run itself, not its id(): a replaced history may reuse a freed object's id
        key = (tuple(state.revision.values()), last_run, int(now.timestamp() // AGE_STEP_S))
        cached = self._summary_cache.get(name)
        if cached is not None and cached[0] == key:
            return cached[1]
        summary = summarize(state, now, last_run=last_run)
        self._summary_cache[name] = (key, summary)
        return summary

    def _update_pace(self) -> None:
        """The rows on screen sample at the full rate, the others slower."""
        table = self.query_one(FleetTable)
        if table.size.height and self.is_current:  # laid out: its rows on screen are known
            console_app(self).set_on_screen_hosts(table.rows_in_view(), rows=True)

    def _show_title(self, table: FleetTable) -> None:
        total = len(self.summaries)
        shown = len(table.visible_hosts())
        levels = [level(s) for s in self.summaries]
        parts = [f"Fleet — {total} hosts" + (f" ({shown} shown)" if shown != total else "")]
        alerted = levels.count("error") + levels.count("warning")
        if alerted:
            parts.append(f"{alerted} with alerts")
        down = sum(1 for s in self.summaries if s.alert("host-unreachable"))
        if down:
            parts.append(f"{down} unreachable")
        parts.append(f"sort: {table.sort_label}")
        if table.query_text:
            parts.append(f"filter: {table.query_text}")
        self.query_one("#fleet-title", Static).update(
            Content.styled(" · ".join(parts), "bold $accent"))
        self._show_columns(table)

    def _show_columns(self, table: FleetTable) -> None:
        """The columns off screen, by name, on their own line: the conclusions (sglang to top
        cause) are last and were hidden at 120 columns with no sign they exist (issue 41.8)."""
        left, right = table.hidden_columns()
        said = ([f"← {', '.join(left)}"] if left else []) + (
            [f"→ {', '.join(right)}"] if right else [])
        line = self.query_one("#fleet-columns", Static)
        line.display = bool(said)
        line.update(Content("columns off screen (←/→ scroll): " + " · ".join(said)))

    def on_resize(self) -> None:
        self.call_after_refresh(self._show_columns, self.query_one(FleetTable))

    def on_fleet_table_columns_scrolled(self, _event: FleetTable.ColumnsScrolled) -> None:
        self._show_columns(self.query_one(FleetTable))

    def _show_detail(self, table: FleetTable) -> None:
        host = table.selected_host()
        summary = next((s for s in self.summaries if s.host == host), None)
        text = Text()
        if summary is not None:
            text.append(summary.host, style="bold")
            said = [a.message for a in summary.alerts] or (
                [summary.unreachable_reason] if summary.unreachable_reason else ["no alerts"])
            text.append(": " + " · ".join(said))
        self.query_one("#fleet-detail", Static).update(text)

    def on_fleet_table_row_highlighted(self, _event: FleetTable.RowHighlighted) -> None:
        self._show_detail(self.query_one(FleetTable))

    def on_fleet_table_scrolled(self, _event: FleetTable.Scrolled) -> None:
        self._update_pace()

    def on_fleet_table_row_selected(self, _event: FleetTable.RowSelected) -> None:
        self.action_open_host()

    # -- the history (last sweep, its causes) ----------------------------------------------

    def _read_history(self) -> None:
        self.run_worker(self._history_thread, thread=True, exclusive=True,
                        group="fleet-history", exit_on_error=False)

    def _history_thread(self) -> None:
        from console.fleet.history import HistoryReader

        app = console_app(self)
        if app.store_path is None:
            return
        known = HistoryReader(app.store_path).read(list(app.sessions))
        runs = {host: h.last_run for host, h in known.items() if h.last_run is not None}
        self.app.call_from_thread(self._got_history, runs)

    def _got_history(self, runs: dict[str, LastRun]) -> None:
        self.history = runs
        self.refresh_rows()

    # -- keys ------------------------------------------------------------------------------

    def action_open_host(self) -> None:
        host = self.query_one(FleetTable).selected_host()
        if host is None:
            return
        app = console_app(self)
        app.switch_host(host)
        app.run_action_id("dashboard")

    def action_sort(self) -> None:
        table = self.query_one(FleetTable)
        table.cycle_sort()
        self._show_title(table)

    def action_reverse(self) -> None:
        table = self.query_one(FleetTable)
        table.reverse_sort()
        self._show_title(table)

    def action_filter(self) -> None:
        field = self.query_one("#fleet-filter", Input)
        field.display = True
        field.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        table = self.query_one(FleetTable)
        table.set_query(event.value)
        self._show_title(table)
        self._show_detail(table)

    def on_input_submitted(self, _event: Input.Submitted) -> None:
        self.query_one(FleetTable).focus()

    def action_back(self) -> None:
        field = self.query_one("#fleet-filter", Input)
        if field.value or field.display:
            field.value = ""
            field.display = False
            self.query_one(FleetTable).focus()
            return
        console_app(self).run_action_id("dashboard")
