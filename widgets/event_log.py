"""The event log: background failures and state changes, newest last. Never silent."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from rich.text import Text
from textual.widgets import DataTable

from widgets.table_fill import fill_table


class EventLike(Protocol):
    @property
    def at(self) -> datetime: ...
    @property
    def host(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def level(self) -> str: ...
    @property
    def message(self) -> str: ...


_LEVEL_STYLE = {"error": "bold red", "warning": "yellow", "info": "dim"}


class EventLogTable(DataTable[Text]):
    DEFAULT_CSS = """
    EventLogTable { height: 1fr; }
    EventLogTable > .datatable--header { text-style: bold; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self._shown: tuple[EventLike, ...] = ()
        self._room = 0

    def on_mount(self) -> None:
        self._fill(())

    def on_resize(self) -> None:
        self.call_after_refresh(self._refit)

    def _refit(self) -> None:
        if self.scrollable_content_region.width != self._room:
            self._fill(self._shown)

    def show(self, records: Sequence[EventLike]) -> None:
        """Show `records` (oldest first), the cursor on the newest when new ones came."""
        records = tuple(records)
        if records == self._shown:
            return
        shown = self._shown
        new = records[len(shown):]
        if shown and records[: len(shown)] == shown and self._fits(new):
            for record in new:  # a long message wraps in its column: the row grows
                self.add_row(*_cells(record), height=None)
            self._shown = records
        else:
            self._fill(records)
        if records:
            self.move_cursor(row=self.row_count - 1)

    def _fits(self, records: Sequence[EventLike]) -> bool:
        """Whether the columns before the message are wide enough for these records."""
        widths = [column.width for column in self.ordered_columns[:-1]]
        return all(cell.cell_len <= width for record in records
                   for cell, width in zip(_cells(record)[:-1], widths, strict=True))

    def _fill(self, records: tuple[EventLike, ...]) -> None:
        # The message column takes the room the others leave and wraps there: a long
        # message is never cut at the screen's edge.
        self._shown = records
        self._room = self.scrollable_content_region.width
        fill_table(self, _LABELS, [_cells(r) for r in records], keys=_LABELS, room=self._room,
                   wrap=(len(_LABELS) - 1,))


_LABELS = ("time", "host", "source", "level", "message")


def _cells(record: EventLike) -> list[Text]:
    """rich Text cells: literal, never markup."""
    return [Text(record.at.strftime("%H:%M:%S")), Text(record.host), Text(record.source),
            Text(record.level, style=_LEVEL_STYLE.get(record.level, "")), Text(record.message)]
