"""The fleet table: one row per host, sorted and filtered, updated in place.

A line-API widget rather than a DataTable: a DataTable drops its whole render cache on any cell
update, so 36 rows of 16 columns were re-rendered, cell by cell, at every refresh (a quarter of
a core at 64 hosts). Here each row is rendered once per change of its cells, as one strip, and
only the lines of rows that changed are redrawn; a new order or filter keeps the cursor on the
host it was on. The look follows DataTable's (header, zebra stripes, row cursor, one cell of
padding each side of a column).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from console.fleet.models import HostSummary
from widgets.fleet_rows import ALERTS_WIDTH, COLUMNS, SORTS, cells, matches

# Column widths that hold their usual values without jitter as numbers change.
_WIDTHS = {"state": 11, "alerts": ALERTS_WIDTH, "gpus": 11, "tok": 9, "runq": 9, "kv": 4,
           "graph": 5, "power": 13, "mem": 10, "thr": 12, "version": 9, "profile": 14, "sweep": 10,
           "knee": 13, "cause": 22}
MAX_HOST_WIDTH = 28
HEADER_LINES = 1


class FleetTable(ScrollView, can_focus=True):
    """Rows of cells (widgets.fleet_rows.cells) keyed by host; a row cursor."""

    class Scrolled(Message):
        """Other rows are on screen now (the pace of their hosts' sampling follows)."""

    class ColumnsScrolled(Message):
        """Other columns are on screen now (the screen says which are not)."""

    class RowHighlighted(Message):
        """The cursor is on another host's row."""

        def __init__(self, host: str | None) -> None:
            super().__init__()
            self.host = host

    class RowSelected(Message):
        """Enter (or a click on the cursor's row): open that host."""

        def __init__(self, host: str) -> None:
            super().__init__()
            self.host = host

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select_cursor", "Select", show=False),
        Binding("up", "cursor_up", "Cursor up", show=False),
        Binding("down", "cursor_down", "Cursor down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home,ctrl+home", "first", "First", show=False),
        Binding("end,ctrl+end", "last", "Last", show=False),
        Binding("left", "scroll_left", "Scroll left", show=False),
        Binding("right", "scroll_right", "Scroll right", show=False),
    ]
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "fleet-table--header", "fleet-table--cursor", "fleet-table--even-row",
        "fleet-table--odd-row",
    }
    DEFAULT_CSS = """
    FleetTable {
        height: 1fr;
        background: $surface;
        color: $foreground;
        &:focus {
            background-tint: $foreground 5%;
            & > .fleet-table--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .fleet-table--header { background-tint: $foreground 5%; }
        }
        &:dark > .fleet-table--even-row { background: $surface-darken-1 40%; }
        & > .fleet-table--header { text-style: bold; background: $panel; color: $foreground; }
        &:ansi > .fleet-table--header { background: ansi_bright_blue; color: ansi_default; }
        & > .fleet-table--even-row { background: $surface-lighten-1 50%; }
        & > .fleet-table--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
    }
    """

    cursor_row: reactive[int] = reactive(0, always_update=False)

    def __init__(self, *, ascii_only: bool = False, id: str | None = None) -> None:
        super().__init__(id=id)
        self.ascii_only = ascii_only
        self.sort_index = 0
        self.descending = False
        self.query_text = ""
        self.summaries: dict[str, HostSummary] = {}
        self._order: list[str] = []
        self._cells: dict[str, tuple[Text, ...]] = {}
        self._host_width = 0
        self._widths: list[int] = []
        self._strips: dict[str, Strip] = {}  # host -> its row, unstyled background
        self._header: Strip | None = None
        self._styled: dict[tuple[str, str], Strip] = {}  # (host or "", row style) -> strip

    # -- what is shown ---------------------------------------------------------------------

    @property
    def sort_label(self) -> str:
        return SORTS[self.sort_index].label + (" (reversed)" if self.descending else "")

    @property
    def row_count(self) -> int:
        return len(self._order)

    def visible_hosts(self) -> list[str]:
        return list(self._order)

    def cells_at(self, row: int) -> tuple[Text, ...]:
        """The cells of the ROWth row shown (tests and the detail line read them)."""
        return self._cells[self._order[row]]

    def selected_host(self) -> str | None:
        if not self._order or self.cursor_row >= len(self._order):
            return None
        return self._order[self.cursor_row]

    def hidden_columns(self) -> tuple[list[str], list[str]]:
        """The columns' labels cut off on the left and on the right of the table's view: the
        screen says which (at 120 columns the conclusions, sglang to top cause, are off to
        the right, issue 41.8)."""
        width = self.scrollable_content_region.width
        if not width or not self._widths:
            return [], []
        x = int(self.scroll_offset.x)
        left: list[str] = []
        right: list[str] = []
        start = 0
        for (_key, label), cell in zip(COLUMNS, self._widths, strict=True):
            if start < x:
                left.append(label)
            elif start + cell + 1 > x + width:  # its cell not whole on screen
                right.append(label)
            start += cell + 2
        return left, right

    def rows_in_view(self) -> list[str]:
        """The hosts whose rows are on screen now (the table's scroll window)."""
        top = int(self.scroll_offset.y)
        height = max(1, self.scrollable_content_region.height - HEADER_LINES)
        return self._order[top: top + height]

    # -- updates ---------------------------------------------------------------------------

    def show(self, summaries: Sequence[HostSummary]) -> None:
        self.summaries = {s.host: s for s in summaries}
        self._render_rows()

    def cycle_sort(self) -> None:
        self.sort_index = (self.sort_index + 1) % len(SORTS)
        self._render_rows()

    def reverse_sort(self) -> None:
        self.descending = not self.descending
        self._render_rows()

    def set_query(self, query: str) -> None:
        self.query_text = query
        self._render_rows()

    def _ordered(self) -> list[str]:
        sort = SORTS[self.sort_index]
        shown = [s for s in self.summaries.values() if matches(s, self.query_text)]
        shown.sort(key=sort.key, reverse=self.descending)
        return [s.host for s in shown]

    def _render_rows(self) -> None:
        order = self._ordered()
        fresh = {host: cells(self.summaries[host], ascii_only=self.ascii_only)
                 for host in order}
        host_width = min(MAX_HOST_WIDTH, max([6, *(c[0].cell_len for c in fresh.values())]))
        if host_width != self._host_width or not self._widths:
            self._set_widths(host_width)
        changed = [host for host in order if not _same_row(self._cells.get(host), fresh[host])]
        for host in changed:
            self._strips.pop(host, None)
        self._styled = {key: strip for key, strip in self._styled.items()
                        if key[0] not in changed}
        self._cells = fresh
        if order != self._order:
            self._reorder(order)
        else:
            for host in changed:
                self._refresh_row(order.index(host))

    def _set_widths(self, host_width: int) -> None:
        self._host_width = host_width
        self._widths = [host_width if key == "host" else _WIDTHS[key] for key, _ in COLUMNS]
        self._strips.clear()
        self._styled.clear()
        self._header = None
        self.refresh()

    def _reorder(self, order: list[str]) -> None:
        selected = self.selected_host()
        self._order = order
        self.virtual_size = Size(sum(w + 2 for w in self._widths), len(order) + HEADER_LINES)
        row = order.index(selected) if selected in order else min(self.cursor_row,
                                                                   max(0, len(order) - 1))
        self.cursor_row = row
        self.mutate_reactive(FleetTable.cursor_row)  # a new host under the same row number
        self.refresh()

    # -- cursor ----------------------------------------------------------------------------

    def watch_cursor_row(self, old: int, new: int) -> None:
        self._refresh_row(old)
        self._refresh_row(new)
        self._keep_in_view(new)
        self.post_message(self.RowHighlighted(self.selected_host()))

    def _move(self, row: int) -> None:
        if self._order:
            self.cursor_row = max(0, min(len(self._order) - 1, row))

    def _page(self) -> int:
        return max(1, self.scrollable_content_region.height - HEADER_LINES)

    def action_cursor_up(self) -> None:
        self._move(self.cursor_row - 1)

    def action_cursor_down(self) -> None:
        self._move(self.cursor_row + 1)

    def action_page_up(self) -> None:
        self._move(self.cursor_row - self._page())

    def action_page_down(self) -> None:
        self._move(self.cursor_row + self._page())

    def action_first(self) -> None:
        self._move(0)

    def action_last(self) -> None:
        self._move(len(self._order) - 1)

    def action_select_cursor(self) -> None:
        host = self.selected_host()
        if host is not None:
            self.post_message(self.RowSelected(host))

    def _keep_in_view(self, row: int) -> None:
        top = int(self.scroll_offset.y)
        if row < top:
            self.scroll_to(y=row, animate=False)
        elif row >= top + self._page():
            self.scroll_to(y=row - self._page() + 1, animate=False)

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y < HEADER_LINES:
            return
        row = int(self.scroll_offset.y) + offset.y - HEADER_LINES
        if row >= len(self._order):
            return
        if row == self.cursor_row:
            self.action_select_cursor()
        else:
            self._move(row)

    def watch_scroll_x(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_x(old_value, new_value)
        if round(old_value) != round(new_value):
            self.post_message(self.ColumnsScrolled())

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if round(old_value) != round(new_value):
            self.post_message(self.Scrolled())

    # -- drawing ---------------------------------------------------------------------------

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styled.clear()  # a theme, focus or size class changed the row styles
        self._header = None

    def _refresh_row(self, row: int) -> None:
        on_screen = row - int(self.scroll_offset.y) + HEADER_LINES
        if HEADER_LINES <= on_screen < self.scrollable_content_region.height:
            self.refresh_line(row + HEADER_LINES)  # ScrollView's lines count from the top

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        x = int(self.scroll_offset.x)
        if y < HEADER_LINES:
            strip = self._header_strip()
        else:
            row = int(self.scroll_offset.y) + y - HEADER_LINES
            if row >= len(self._order):
                return Strip.blank(width, self.rich_style)
            strip = self._row_strip(row)
        return strip.crop_extend(x, x + width, strip_style(strip))

    def _header_strip(self) -> Strip:
        if self._header is None:
            labels = tuple(Text(label) for _key, label in COLUMNS)
            style = self.get_component_rich_style("fleet-table--header")
            self._header = self._line(labels).apply_style(self.rich_style + style)
        return self._header

    def _row_strip(self, row: int) -> Strip:
        host = self._order[row]
        if row == self.cursor_row:
            variant = "fleet-table--cursor"
        else:
            variant = "fleet-table--even-row" if row % 2 == 0 else "fleet-table--odd-row"
        styled = self._styled.get((host, variant))
        if styled is None:
            plain = self._strips.get(host)
            if plain is None:
                plain = self._strips[host] = self._line(self._cells[host])
            styled = self._styled[(host, variant)] = self._styled_row(plain, variant)
        return styled

    def _styled_row(self, plain: Strip, variant: str) -> Strip:
        """Zebra rows go under the cells' own colours; the cursor goes over them (as in a
        DataTable: the cursor's row reads in the cursor's colours)."""
        style = self.get_component_rich_style(variant)
        if variant != "fleet-table--cursor":
            return plain.apply_style(self.rich_style + style)
        segments = Segment.apply_style(iter(plain), self.rich_style, post_style=style)
        return Strip(segments, plain.cell_length)

    def _line(self, row: tuple[Text, ...]) -> Strip:
        """One row: each cell cut or padded to its column, one space each side."""
        line = Text(no_wrap=True, end="")
        for width, cell in zip(self._widths, row, strict=False):
            piece = cell.copy()
            piece.truncate(width, overflow="ellipsis", pad=True)
            line.append(" ")
            line.append_text(piece)
            line.append(" ")
        segments = list(line.render(self.app.console))
        return Strip(segments, line.cell_len)


def strip_style(strip: Strip) -> Style:
    """The background a line is extended with past its cells: the row's own."""
    for segment in strip:
        if isinstance(segment, Segment) and segment.style is not None:
            return Style(bgcolor=segment.style.bgcolor)
    return Style()


def _same_row(before: tuple[Text, ...] | None, after: tuple[Text, ...]) -> bool:
    return before is not None and all(_same(a, b) for a, b in zip(before, after, strict=True))


def _same(a: Text, b: Text) -> bool:
    # Text's own == ignores the whole-text style (a state turning from green to red).
    return a.plain == b.plain and a.style == b.style and a.spans == b.spans
