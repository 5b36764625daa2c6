"""The event log: background failures and state changes, newest last. Never silent."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from rich.text import Text
from textual.widgets import DataTable


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


class EventLogTable(DataTable[str | Text]):
    DEFAULT_CSS = """
    EventLogTable { height: 1fr; }
    EventLogTable > .datatable--header { text-style: bold; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self._shown: tuple[object, ...] = ()

    def on_mount(self) -> None:
        self.add_column("time", key="time", width=8)
        self.add_column("host", key="host")
        self.add_column("source", key="source")
        self.add_column("level", key="level", width=7)
        self.add_column("message", key="message")

    def show(self, records: Sequence[EventLike]) -> None:
        """Show `records` (oldest first); appends when only new ones came."""
        records = tuple(records)
        if records == self._shown:
            return
        shown = self._shown
        if shown and records[: len(shown)] == shown:
            new = records[len(shown) :]
        else:
            self.clear()
            new = records
        for record in new:
            style = _LEVEL_STYLE.get(record.level, "")
            # rich Text cells: literal (never markup) and measured for the column widths.
            self.add_row(
                record.at.strftime("%H:%M:%S"),
                Text(record.host),
                Text(record.source),
                Text(record.level, style=style),
                Text(record.message),
            )
        self._shown = records
        if new:
            self.move_cursor(row=self.row_count - 1)
