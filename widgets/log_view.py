"""LogView: the highlighted server log with filter, search, follow/pause and a detail pane.

The widget does no I/O. The app feeds it with `append_events(batch)` every 100-250 ms (the
follower's batches); everything else is key bindings or methods the app may call.

Keys (BINDINGS; `?` lists them): `/` filter by regex, `ctrl+f` search, `n`/`N` next/previous
match, `l` cycle minimum level, `R` cycle rank, `o` show/fold the console's own polls, `w` wrap,
`left`/`right` scroll long lines sideways, `escape` clear filter and search, `space`
pause/follow, `end`/`G` jump to the end and follow, `up`/`down`/`pgup`/`pgdn`/`home` move,
`enter` toggle details, `y` copy the selected event (OSC 52).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.reactive import reactive
from textual.widgets import Input, Static

from console.logs.catalogue import Catalogue, default_catalogue
from console.logs.models import LogEvent, Severity
from console.logs.own_requests import ProbeRate
from console.logs.store import LogFilter, LogStore
from widgets.log_lines import LogLines

MAX_DETAIL_CHARS = 100_000
_SEVERITY_CYCLE: tuple[Severity | None, ...] = (
    None,
    Severity.INFO,
    Severity.WARNING,
    Severity.ERROR,
)


class LogView(Vertical):
    DEFAULT_CSS = """
    LogView { height: 1fr; }
    LogView > LogLines { height: 1fr; }
    LogView > #log-status { height: 1; background: $panel; padding: 0 1; }
    LogView > #log-detail-scroll { height: 9; border-top: solid $panel-lighten-2; }
    LogView > #log-detail-scroll.-hidden { display: none; }
    LogView > #log-input { display: none; }
    LogView > #log-input.-shown { display: block; }
    """

    BINDINGS = [
        # Keys the app binds globally (r restart, f flags, d dashboard, s sweep, v GPU rows, m
        # GPU metric) are left to it; the tooltips are what `?` lists for each key.
        Binding("slash", "start_filter", "Filter", id="log-filter",
                tooltip="Filter the log by regex (empty: none)"),
        Binding("ctrl+f,f3", "start_search", "Search", id="log-search",
                tooltip="Search by regex (pauses following)"),
        Binding("n", "search_next", "Next match", id="log-search-next", tooltip="Next match"),
        Binding("N", "search_prev", "Prev match", id="log-search-prev", show=False,
                tooltip="Previous match"),
        Binding("l", "cycle_severity", "Level", id="log-severity",
                tooltip="Minimum level: all, info, warn, error"),
        Binding("R", "cycle_rank", "Rank", id="log-rank", show=False,
                tooltip="Only one rank's lines (TP0, TP1…), then all"),
        Binding("o", "toggle_own", "Polls", id="log-own", show=False,
                tooltip="Show or fold the console's own /ready /health /metrics polls"),
        Binding("w", "toggle_wrap", "Wrap", id="log-wrap",
                tooltip="Wrap long lines (else cut with … and scroll sideways)"),
        Binding("left,less_than_sign", "sideways(-1)", "Left", id="log-left", show=False,
                tooltip="Scroll long lines left (not wrapped)"),
        Binding("right,greater_than_sign", "sideways(1)", "Right", id="log-right", show=False,
                tooltip="Scroll long lines right (not wrapped)"),
        Binding("escape", "clear", "Clear", id="log-clear", show=False,
                tooltip="Clear the filter and the search"),
        Binding("space", "toggle_follow", "Follow/pause", id="log-follow",
                tooltip="Pause or follow the end"),
        Binding("end,G", "follow_end", "End", id="log-end", show=False,
                tooltip="Jump to the end and follow"),
        Binding("home", "home", "Top", id="log-home", show=False, tooltip="First line"),
        Binding("up,k", "cursor(-1)", "Up", show=False, tooltip="Previous line"),
        Binding("down,j", "cursor(1)", "Down", show=False, tooltip="Next line"),
        Binding("pageup", "page(-1)", "Page up", show=False, tooltip="Page up"),
        Binding("pagedown", "page(1)", "Page down", show=False, tooltip="Page down"),
        Binding("enter,i", "toggle_detail", "Details", id="log-detail",
                tooltip="Show or hide the detail pane (why it matters, what to do)"),
        Binding("y", "copy_line", "Copy", id="log-copy",
                tooltip="Copy the selected event (OSC 52)"),
    ]

    follow: reactive[bool] = reactive(True)
    new_lines: reactive[int] = reactive(0)

    def __init__(
        self,
        *,
        max_lines: int = 50_000,
        max_chars: int = 32 << 20,
        catalogue: Catalogue | None = None,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.store = LogStore(max_lines=max_lines, max_chars=max_chars)
        self._catalogue = catalogue
        self.search_pattern: re.Pattern[str] | None = None
        self.message_text = ""
        self._input_mode: str | None = None
        self._selected_row_id: int | None = None
        self.probes = ProbeRate()
        self.store.set_filter(LogFilter(hide_own=True))

    @property
    def catalogue(self) -> Catalogue:
        """The catalogue that explains events in the detail pane, loaded when first needed
        (not while the console draws its first frame)."""
        if self._catalogue is None:
            self._catalogue = default_catalogue()
        return self._catalogue

    def compose(self) -> ComposeResult:
        yield LogLines(self.store, id="log-lines")
        yield Static(id="log-status", markup=False)
        with VerticalScroll(id="log-detail-scroll"):
            yield Static(id="log-detail", markup=False)
        # The filter/search input is mounted when first opened (`/`, ctrl+f): hidden until
        # then, it is no part of the console's first frame.

    def on_mount(self) -> None:
        self.lines = self.query_one(LogLines)
        self._update_status()
        self._update_detail()

    # -- public API ---------------------------------------------------------------------------

    def append_events(self, events: Sequence[LogEvent]) -> None:
        """Add a batch (the app's 100-250 ms flush). Follows the end unless paused."""
        if not events:
            return
        added = self.store.append(events)
        self.probes.add(events)
        if not self.is_mounted:
            return
        lines = self.lines
        new_lines = tuple(line for event in events for line in event.lines)
        lines.rows_changed(new_lines)
        if self.follow:
            self._to_end()
        else:
            self.new_lines += added
            self._keep_selection()
        self._update_status()

    def set_filter(self, flt: LogFilter) -> None:
        selected = self._selected_row_id
        self.store.set_filter(flt)
        self.lines.reset()
        index = self.store.visible_index_of(selected) if selected is not None else None
        if index is None:
            index = self.store.visible_count - 1 if self.follow else 0
        self.lines.move_cursor(index, by_user=False)
        self._update_status()

    def set_regex_filter(self, pattern: str) -> bool:
        """Filter by regex (empty clears it); False and a status message if it is invalid."""
        compiled = self._compile(pattern) if pattern else None
        if pattern and compiled is None:
            return False
        self.set_filter(self.store.filter.replace(pattern=compiled))
        return True

    def search(self, pattern: str, *, forward: bool = True) -> int | None:
        compiled = self._compile(pattern) if pattern else None
        self.search_pattern = compiled
        self.lines.search_pattern = compiled
        self.lines.reset()
        if compiled is None:
            self._update_status()
            return None
        return self._find(forward=forward, include_current=True)

    def clear(self) -> None:
        self.store.clear()
        self.new_lines = 0
        self.lines.reset()
        self._update_status()
        self._update_detail()

    @property
    def selected_event(self) -> LogEvent | None:
        if self.store.visible_count == 0:
            return None
        index = min(self.lines.cursor, self.store.visible_count - 1)
        return self.store.row(index)[0]

    # -- actions ------------------------------------------------------------------------------

    def action_start_search(self) -> None:
        self._open_input("search", self.search_pattern.pattern if self.search_pattern else "")

    def action_start_filter(self) -> None:
        pattern = self.store.filter.pattern
        self._open_input("filter", pattern.pattern if pattern else "")

    def action_search_next(self) -> None:
        self._find(forward=True)

    def action_search_prev(self) -> None:
        self._find(forward=False)

    def action_cycle_severity(self) -> None:
        flt = self.store.filter
        current = flt.min_severity
        position = _SEVERITY_CYCLE.index(current) if current in _SEVERITY_CYCLE else 0
        severity = _SEVERITY_CYCLE[(position + 1) % len(_SEVERITY_CYCLE)]
        self.set_filter(flt.replace(min_severity=severity))

    def action_cycle_rank(self) -> None:
        flt = self.store.filter
        ranks = sorted(self.store.ranks_seen)
        options: list[frozenset[str] | None] = [None, *(frozenset({r}) for r in ranks)]
        position = options.index(flt.ranks) if flt.ranks in options else 0
        self.set_filter(flt.replace(ranks=options[(position + 1) % len(options)]))

    def action_toggle_wrap(self) -> None:
        self.lines.wrap = not self.lines.wrap
        self._update_status()

    def action_sideways(self, direction: int) -> None:
        lines = self.lines
        if lines.wrap:
            self.message_text = "wrapped: nothing to scroll sideways (w: cut)"
        else:
            self.message_text = ""
            lines.scroll_sideways(direction * max(8, lines.size.width // 2))
        self._update_status()

    def action_toggle_own(self) -> None:
        """Show or fold the console's own access lines (/ready, /metrics... polls)."""
        flt = self.store.filter
        self.set_filter(flt.replace(hide_own=not flt.hide_own))

    def action_clear(self) -> None:
        if self._input_mode is not None:
            self._close_input()
            return
        self.search("")
        self.set_filter(LogFilter(hide_own=self.store.filter.hide_own))

    def action_toggle_follow(self) -> None:
        if self.follow:
            self.follow = False
        else:
            self.action_follow_end()
        self._update_status()

    def action_follow_end(self) -> None:
        self.follow = True
        self.new_lines = 0
        self._to_end()
        self._update_status()

    def action_home(self) -> None:
        self.lines.move_cursor(0, by_user=True)

    def action_cursor(self, delta: int) -> None:
        self.lines.move_cursor(self.lines.cursor + delta, by_user=True)

    def action_page(self, direction: int) -> None:
        height = max(1, self.lines.scrollable_content_region.height - 1)
        self.lines.move_cursor(self.lines.cursor + direction * height, by_user=True)

    def action_toggle_detail(self) -> None:
        self.query_one("#log-detail-scroll").toggle_class("-hidden")

    @property
    def detail_visible(self) -> bool:
        return not self.query_one("#log-detail-scroll").has_class("-hidden")

    def show_detail(self, visible: bool) -> None:
        """Show or hide the detail pane (a screen short of rows hides it; enter brings it)."""
        self.query_one("#log-detail-scroll").set_class(not visible, "-hidden")

    def watch_follow(self, follow: bool) -> None:
        if self.is_mounted:
            self.query_one(LogLines).set_class(not follow, "-paused")

    def action_copy_line(self) -> None:
        event = self.selected_event
        if event is None:
            return
        self.app.copy_to_clipboard(event.text)
        self.message_text = f"copied {event.line_count} line(s)"
        self._update_status()

    # -- events -------------------------------------------------------------------------------

    def on_log_lines_cursor_moved(self, message: LogLines.CursorMoved) -> None:
        message.stop()
        if self.store.visible_count:
            self._selected_row_id = self.store.row_id(message.index)
        at_end = message.index >= self.store.visible_count - 1
        if message.by_user and self.follow and not at_end:
            self.follow = False  # the operator is reading: stop yanking the view
        self._update_detail()
        self._update_status()

    def on_input_submitted(self, message: Input.Submitted) -> None:
        message.stop()
        mode = self._input_mode
        value = message.value
        if mode == "search":
            if value and self.search(value) is None and self.search_pattern is not None:
                self.message_text = f"no match for /{value}/"
        elif mode == "filter" and not self.set_regex_filter(value):
            return  # keep the input open to fix the regex
        self._close_input()

    # -- helpers ------------------------------------------------------------------------------

    def _compile(self, pattern: str) -> re.Pattern[str] | None:
        try:
            return re.compile(pattern)
        except re.error as exc:
            self.message_text = f"bad regex: {exc}"
            self._update_status()
            return None

    def _find(self, *, forward: bool, include_current: bool = False) -> int | None:
        pattern = self.search_pattern
        if pattern is None or self.store.visible_count == 0:
            return None
        start = self.lines.cursor
        if include_current:
            start = start - 1 if forward else start + 1
        found = self.store.search(pattern, start, forward=forward)
        if found is None:
            self.message_text = f"no match for /{pattern.pattern}/"
        else:
            self.message_text = ""
            self.follow = False
            self.lines.move_cursor(found, by_user=True)
        self._update_status()
        return found

    def _to_end(self) -> None:
        lines = self.lines
        lines.move_cursor(self.store.visible_count - 1, by_user=False)
        # The new virtual size applies on the next refresh; scroll once it has.
        lines.call_after_refresh(lines.scroll_end, animate=False, immediate=True)

    def _keep_selection(self) -> None:
        if self._selected_row_id is None:
            return
        index = self.store.visible_index_of(self._selected_row_id)
        if index is not None and index != self.lines.cursor:
            self.lines.cursor = index

    def _open_input(self, mode: str, value: str) -> None:
        self._input_mode = mode
        placeholder = "search regex" if mode == "search" else "filter regex (empty: none)"
        opened = self.query(Input)
        if opened:
            field = opened.first()
            field.placeholder = placeholder
            field.value = value
        else:
            field = Input(value, placeholder=placeholder, id="log-input")
            self.mount(field)  # attached at once: the focus below lands once it is mounted
        field.add_class("-shown")
        field.focus()

    def _close_input(self) -> None:
        self._input_mode = None
        self.query_one(Input).remove_class("-shown")
        self.lines.focus()
        self._update_status()

    def _update_status(self) -> None:
        if not self.is_mounted:
            return
        parts: list[tuple[str, str]] = []
        if self.follow:
            parts.append(("FOLLOW", "bold"))
        else:
            parts.append(("PAUSED", "bold reverse"))
            if self.new_lines:
                parts.append((f"  +{self.new_lines} new lines (end: follow)", "bold"))
        store = self.store
        if not self.follow and store.visible_count:
            at = store.source_line(min(self.lines.cursor, store.visible_count - 1))
            parts.append((f"  at line {at}", ""))
        parts.append((f"  {store.visible_count}/{store.line_count} lines", ""))
        if self.lines.wrap:
            parts.append(("  wrap", "bold"))
        elif self.lines.scroll_x:
            parts.append((f"  ← col {int(self.lines.scroll_x) + 1}", "bold"))
        if store.filter.narrowing:
            parts.append((f"  filter: {store.filter.describe()}", "italic"))
        own = self.probes.per_minute
        if store.filter.hide_own:
            parts.append((f"  console polls: {own}/min folded (o: show)", "dim"))
        else:
            parts.append((f"  console polls: {own}/min shown (o: fold)", "dim"))
        if self.search_pattern is not None:
            parts.append((f"  search: /{self.search_pattern.pattern}/", "italic"))
        if store.dropped_lines:
            parts.append((f"  ({store.dropped_lines} old lines dropped)", "dim"))
        if self.message_text:
            parts.append((f"  {self.message_text}", "bold"))
        self.query_one("#log-status", Static).update(Text.assemble(*parts, no_wrap=True))

    def _update_detail(self) -> None:
        if not self.is_mounted:
            return
        self.query_one("#log-detail", Static).update(self.detail_text(self.selected_event))

    def detail_text(self, event: LogEvent | None) -> Text:
        """The detail pane: catalogue explanation, then the whole event (long lines intact)."""
        if event is None:
            return Text("no line selected", style="dim")
        text = Text(no_wrap=False)
        head = [event.severity.label.upper(), event.kind]
        if event.ranks:
            head.append(event.ranks)
        if event.timestamp:
            head.append(event.timestamp)
        first = event.seq + 1  # numbered as the status line's "at line" (LogStore.source_line)
        last = first + event.line_count - 1
        head.append(f"line {first}" if last == first else f"lines {first}\u2013{last}")
        text.append(" · ".join(head) + "\n", style="bold")
        for entry_id, label in ((event.catalogue_id, ""), (event.cause_id, "cause: ")):
            entry = self.catalogue.by_id.get(entry_id) if entry_id else None
            if entry is None:
                continue
            text.append(f"{label}{entry.title or entry.id}: ", style="bold")
            text.append(entry.explanation + "\n")
            text.append("do: ", style="bold")
            text.append(entry.action + "\n")
        body = event.text
        if len(body) > MAX_DETAIL_CHARS:
            body = f"{body[:MAX_DETAIL_CHARS]}… (+{len(body) - MAX_DETAIL_CHARS} chars)"
        text.append(body)
        return text
