"""Filling a DataTable with columns as wide as their widest cell.

DataTable's own auto-width measured cells against the app console's options and kept some
columns at their header's width, cutting values (a config path, "+112.0 (+11.1%)")."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import DataTable

MAX_COLUMN_WIDTH = 100


def fill_table(
    table: DataTable[Text],
    labels: Sequence[str | Text],
    rows: Sequence[Sequence[Text]],
    *,
    keys: Sequence[str] | None = None,
    row_keys: Sequence[str] | None = None,
) -> None:
    """Replace the table's columns and rows; untrusted text must already be `Text`."""
    table.clear(columns=True)
    for index, label in enumerate(labels):
        label_text = label if isinstance(label, Text) else Text(label)
        widest = max([label_text.cell_len, *(row[index].cell_len for row in rows)])
        key = keys[index] if keys is not None else None
        table.add_column(label_text, key=key, width=min(widest, MAX_COLUMN_WIDTH))
    for number, row in enumerate(rows):
        table.add_row(*row, key=row_keys[number] if row_keys is not None else None)
