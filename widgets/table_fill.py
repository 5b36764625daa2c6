"""Filling a DataTable with columns as wide as their widest cell, or, given the room, with its
text columns narrowed to fit and their cells wrapped onto more lines.

DataTable's own auto-width measured cells against the app console's options and kept some
columns at their header's width, cutting values (a config path, "+112.0 (+11.1%)"); a long
config value or event message pushed the columns after it off screen (issue 26, item 5)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import DataTable

MAX_COLUMN_WIDTH = 100
CELL_PADDING = 2  # DataTable's cell_padding (1) on either side of a column
MIN_WRAP_WIDTH = 8  # a wrapped column narrower than this reads as a column of letters


def fit_widths(natural: Sequence[int], wrap: Sequence[int], room: int) -> list[int]:
    """Widths that fit `room` (cell padding included): the columns in `wrap` give up width,
    the widest first, down to MIN_WRAP_WIDTH; the others keep theirs."""
    widths = list(natural)
    excess = sum(w + CELL_PADDING for w in widths) - room
    while excess > 0:
        wide = [i for i in wrap if widths[i] > MIN_WRAP_WIDTH]
        if not wide:
            break
        top = max(widths[i] for i in wide)
        tops = [i for i in wide if widths[i] == top]
        below = max([MIN_WRAP_WIDTH, *(widths[i] for i in wide if widths[i] < top)])
        cut = min(top - below, -(-excess // len(tops)))  # ceil: the tops shrink together
        for i in tops:
            widths[i] -= cut
        excess -= cut * len(tops)
    return widths


def fill_table(
    table: DataTable[Text],
    labels: Sequence[str | Text],
    rows: Sequence[Sequence[Text]],
    *,
    keys: Sequence[str] | None = None,
    row_keys: Sequence[str] | None = None,
    room: int = 0,
    wrap: Sequence[int] = (),
) -> None:
    """Replace the table's columns and rows; untrusted text must already be `Text`. With
    `room` (the table's width) the `wrap` columns narrow to fit it, their cells wrapped."""
    table.clear(columns=True)
    label_texts = [label if isinstance(label, Text) else Text(label) for label in labels]
    natural = [min(MAX_COLUMN_WIDTH, max([label.cell_len, *(row[i].cell_len for row in rows)]))
               for i, label in enumerate(label_texts)]
    widths = fit_widths(natural, wrap, room) if room > 0 else natural
    for index, label in enumerate(label_texts):
        key = keys[index] if keys is not None else None
        table.add_column(label, key=key, width=widths[index])
    wrapped = widths != natural
    for number, row in enumerate(rows):
        table.add_row(*row, key=row_keys[number] if row_keys is not None else None,
                      height=None if wrapped else 1)
