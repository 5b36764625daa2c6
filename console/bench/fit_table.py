"""Plain-text tables that fit a terminal's width: key columns (repeated in every part) and
groups of columns, each under its title if it has one; the groups that do not fit beside the
others go to the next part below, so no number is cut or wrapped mid-cell (issue 26, item 5:
`plateau compare` printed one 275-column table, `plateau sweep` a 170-column one)."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass

GAP = "  "


def terminal_width() -> int:
    """$COLUMNS when set, else the terminal's width, else 80 (output to a pipe or a file)."""
    return shutil.get_terminal_size((80, 24)).columns


@dataclass(frozen=True)
class ColumnGroup:
    """Columns read together under one title, e.g. "total tok/s" over A, B, Δ, Δ%."""

    title: str
    headers: tuple[str, ...]
    rows: Sequence[Sequence[str]]  # one list of cells per key, in the keys' order

    def widths(self) -> list[int]:
        widths = [max([len(h), *(len(row[i]) for row in self.rows)])
                  for i, h in enumerate(self.headers)]
        short = len(self.title) + 2 - self.span(widths)  # the title and a dash either side
        if self.title and short > 0:
            widths[0] += short
        return widths

    @staticmethod
    def span(widths: Sequence[int]) -> int:
        return sum(widths) + len(GAP) * (len(widths) - 1)


def fit_table(key_headers: Sequence[str], keys: Sequence[Sequence[str]],
              groups: Sequence[ColumnGroup], width: int) -> str:
    """Parts of at most `width` columns (one group a part when even that is wider), blank
    lines between them; the key columns (one row of `keys` per row) begin every part. With
    no group titled, no title line."""
    key_ws = [max([len(h), *(len(row[i]) for row in keys)]) for i, h in enumerate(key_headers)]
    key_w = ColumnGroup.span(key_ws)
    parts: list[list[ColumnGroup]] = [[]]
    used = key_w
    for group in groups:
        span = len(GAP) + ColumnGroup.span(group.widths())
        if parts[-1] and used + span > width:
            parts.append([])
            used = key_w
        parts[-1].append(group)
        used += span
    return "\n\n".join(_part(key_headers, keys, part, key_ws) for part in parts)


def _part(key_headers: Sequence[str], keys: Sequence[Sequence[str]],
          groups: Sequence[ColumnGroup], key_ws: Sequence[int]) -> str:
    widths = [g.widths() for g in groups]
    lines = [_line(key_headers, key_ws, [g.headers for g in groups], widths),
             _line(["-" * n for n in key_ws], key_ws, [["-" * n for n in w] for w in widths],
                   widths)]
    if any(g.title for g in groups):
        lines.insert(0, " " * ColumnGroup.span(key_ws) + "".join(
            GAP + (f" {g.title} ".center(ColumnGroup.span(w), "-") if g.title
                   else " " * ColumnGroup.span(w))
            for g, w in zip(groups, widths, strict=True)))
    for index, key in enumerate(keys):
        lines.append(_line(key, key_ws, [g.rows[index] for g in groups], widths))
    return "\n".join(line.rstrip() for line in lines)


def _line(key: Sequence[str], key_ws: Sequence[int], cells: Sequence[Sequence[str]],
          widths: Sequence[Sequence[int]]) -> str:
    return GAP.join(k.rjust(n) for k, n in zip(key, key_ws, strict=True)) + "".join(
        GAP + GAP.join(c.rjust(n) for c, n in zip(group, w, strict=True))
        for group, w in zip(cells, widths, strict=True))
