"""A table too wide for its box, shown as several DataTables stacked: each holds the key
columns (conc) and as many groups of the other columns as fit the width, so no number is
cut at the box's edge (issue 26, item 5: the run's step table and the compare table were).
Groups stay whole: a metric's A, B and delta are read together."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import DataTable

from widgets.table_fill import fill_table

CELL_PADDING = 2  # DataTable's cell_padding (1) on either side of every column
SCROLLBAR = 2  # room kept for the vertical scrollbar of the box around the tables


def split_columns(widths: Sequence[int], keys: int, groups: Sequence[int],
                  room: int) -> list[list[int]]:
    """Column indices of each part: the first `keys` columns in every part, then the groups
    (sizes, in order, covering the other columns) while they fit `room`; a group wider than
    `room` alone gets a part of its own (it then scrolls, the only choice left)."""
    def span(columns: Sequence[int]) -> int:
        return sum(widths[i] + CELL_PADDING for i in columns)

    key_columns = list(range(keys))
    parts: list[list[int]] = [list(key_columns)]
    start = keys
    for size in groups:
        group = list(range(start, start + size))
        start += size
        if len(parts[-1]) > keys and span(parts[-1]) + span(group) > room:
            parts.append(list(key_columns))
        parts[-1].extend(group)
    return parts


class SplitTables(VerticalScroll):
    """`show(labels, rows, keys=, groups=)`; the first table's id is `table_id`, the others
    `table_id-2`, `table_id-3`..."""

    DEFAULT_CSS = """
    SplitTables { height: auto; }
    SplitTables > DataTable { height: auto; max-height: 100%; }
    SplitTables > .-after { margin-top: 1; }
    """

    def __init__(self, table_id: str, make_table: Callable[[str], DataTable[Text]] | None = None,
                 *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.table_id = table_id
        self.make_table = make_table or (lambda tid: DataTable(id=tid, zebra_stripes=True))
        self._data: tuple[list[Text], list[list[Text]], int, list[int], list[str] | None] | None
        self._data = None
        self._parts: list[list[int]] = []

    @property
    def tables(self) -> list[DataTable[Text]]:
        return list(self.query_children(DataTable))

    def show(self, labels: Sequence[Text], rows: Sequence[Sequence[Text]], *, keys: int = 1,
             groups: Sequence[int] | None = None, column_keys: Sequence[str] | None = None,
             row_keys: Sequence[str] | None = None) -> None:
        sizes = list(groups) if groups is not None else [1] * (len(labels) - keys)
        self._data = (list(labels), [list(r) for r in rows], keys, sizes,
                      list(column_keys) if column_keys is not None else None)
        self._row_keys = list(row_keys) if row_keys is not None else None
        self._parts = []
        self._lay_out()

    def clear(self) -> None:
        self._data = None
        for table in self.tables:
            table.clear(columns=True)

    def on_resize(self) -> None:
        self._lay_out()

    def _widths(self, labels: list[Text], rows: list[list[Text]]) -> list[int]:
        return [max([label.cell_len, *(row[i].cell_len for row in rows)])
                for i, label in enumerate(labels)]

    def _lay_out(self) -> None:
        if self._data is None:
            return
        labels, rows, keys, groups, column_keys = self._data
        room = self.size.width - SCROLLBAR
        parts = (split_columns(self._widths(labels, rows), keys, groups, room) if room > 0
                 else [list(range(len(labels)))])  # not laid out yet: one part until it is
        if parts == self._parts:
            return
        self._parts = parts
        tables = self.tables
        while len(tables) < len(parts):
            number = len(tables) + 1
            table = self.make_table(self.table_id if number == 1 else
                                    f"{self.table_id}-{number}")
            if number > 1:
                table.add_class("-after")  # a blank line between the parts
            self.mount(table)
            tables.append(table)
        for extra in tables[len(parts):]:
            extra.remove()
        for table, part in zip(tables, parts, strict=False):
            fill_table(table, [labels[i] for i in part], [[row[i] for i in part] for row in rows],
                       keys=[column_keys[i] for i in part] if column_keys else None,
                       row_keys=self._row_keys)
