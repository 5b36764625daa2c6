"""The fleet table: one row per host, sorted and filtered, updated in place.

A refresh with the same rows in the same order rewrites only the cells that changed (64 hosts
at 1 Hz touch a few cells, not 1,000); a new order or filter rebuilds the rows and keeps the
cursor on the host it was on.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.coordinate import Coordinate
from textual.message import Message
from textual.widgets import DataTable

from console.fleet.models import HostSummary
from widgets.fleet_rows import ALERTS_WIDTH, COLUMNS, SORTS, cells, matches

# Column widths that hold their usual values without jitter as numbers change.
_WIDTHS = {"state": 11, "alerts": ALERTS_WIDTH, "gpus": 11, "tok": 9, "runq": 9, "kv": 4,
           "graph": 5, "power": 13, "mem": 10, "thr": 12, "version": 9, "profile": 14, "sweep": 10,
           "knee": 13, "cause": 22}
MAX_HOST_WIDTH = 28


class FleetTable(DataTable[Text]):
    class Scrolled(Message):
        """Other rows are on screen now (the pace of their hosts' sampling follows)."""

    DEFAULT_CSS = """
    FleetTable { height: 1fr; }
    FleetTable > .datatable--header { text-style: bold; }
    """

    def __init__(self, *, ascii_only: bool = False, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.ascii_only = ascii_only
        self.sort_index = 0
        self.descending = False
        self.query_text = ""
        self.summaries: dict[str, HostSummary] = {}
        self._order: list[str] = []
        self._cells: dict[str, tuple[Text, ...]] = {}
        self._host_width = 0

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if round(old_value) != round(new_value):
            self.post_message(self.Scrolled())

    # -- what is shown ---------------------------------------------------------------------

    @property
    def sort_label(self) -> str:
        return SORTS[self.sort_index].label + (" (reversed)" if self.descending else "")

    def visible_hosts(self) -> list[str]:
        """The hosts in display order (after the filter)."""
        return list(self._order)

    def selected_host(self) -> str | None:
        if not self._order or self.cursor_row >= len(self._order):
            return None
        return self._order[self.cursor_row]

    def rows_in_view(self) -> list[str]:
        """The hosts whose rows are on screen now (the table's scroll window)."""
        top = int(self.scroll_offset.y)
        height = max(1, self.scrollable_content_region.height)
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
        if order != self._order or host_width != self._host_width or not self.columns:
            self._rebuild(order, fresh, host_width)
        else:
            self._patch(fresh)
        self._cells = fresh

    def _rebuild(self, order: list[str], fresh: dict[str, tuple[Text, ...]],
                 host_width: int) -> None:
        selected = self.selected_host()
        self.clear(columns=True)
        self._host_width = host_width
        for key, label in COLUMNS:
            width = host_width if key == "host" else _WIDTHS[key]
            self.add_column(Text(label), key=key, width=width)
        for host in order:
            self.add_row(*fresh[host], key=host)
        self._order = order
        if selected in order:
            self.move_cursor(row=order.index(selected), animate=False)

    def _patch(self, fresh: dict[str, tuple[Text, ...]]) -> None:
        for row, host in enumerate(self._order):
            before = self._cells.get(host)
            for column, cell in enumerate(fresh[host]):
                if before is None or not _same(before[column], cell):
                    self.update_cell_at(Coordinate(row, column), cell)


def _same(a: Text, b: Text) -> bool:
    # Text's own == ignores the whole-text style (a state turning from green to red).
    return a.plain == b.plain and a.style == b.style and a.spans == b.spans
