"""A tiny character canvas for line charts: braille dots (2x4 per cell) or plain ASCII.

Pure rendering helpers (no Textual import), used by SweepChart.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rich.style import Style
from rich.text import Text

_BRAILLE_BITS = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))  # [row][col]


class Canvas:
    """`width` x `height` cells. Draw in dot coordinates (x right, y up)."""

    def __init__(self, width: int, height: int, *, ascii_only: bool = False) -> None:
        self.width = max(1, width)
        self.height = max(1, height)
        self.ascii_only = ascii_only
        self.xdots = self.width * (1 if ascii_only else 2)
        self.ydots = self.height * (1 if ascii_only else 4)
        self._bits = [[0] * self.width for _ in range(self.height)]
        self._chars: list[list[str | None]] = [[None] * self.width for _ in range(self.height)]
        self._styles: list[list[Style | None]] = [[None] * self.width for _ in range(self.height)]

    def dot(self, x: int, y: int, style: Style, char: str = ".") -> None:
        if not (0 <= x < self.xdots and 0 <= y < self.ydots):
            return
        row_from_top = self.ydots - 1 - y
        if self.ascii_only:
            cell_x, cell_y = x, row_from_top
            if self._chars[cell_y][cell_x] not in (None, ".") and char == ".":
                return  # keep markers over line dots
            self._chars[cell_y][cell_x] = char
        else:
            cell_x, cell_y = x // 2, row_from_top // 4
            self._bits[cell_y][cell_x] |= _BRAILLE_BITS[row_from_top % 4][x % 2]
        self._styles[cell_y][cell_x] = style

    def marker(self, x: int, y: int, style: Style, char: str) -> None:
        """A point marker: a letter in ASCII mode, a 2x2 dot blob in braille."""
        if self.ascii_only:
            self.dot(x, y, style, char)
            return
        for dx in (0, 1):
            for dy in (0, 1):
                self.dot(x - dx + 1 if x % 2 == 0 else x - dx, y + dy - 1, style)

    def line(self, x0: int, y0: int, x1: int, y1: int, style: Style, dash: int = 1) -> None:
        """A straight line; `dash` 2 draws every other dot (a dotted line). Ends outside the
        canvas are clamped to it, so a wild value costs no more than the canvas's size."""
        x0, x1 = (min(max(x, -1), self.xdots) for x in (x0, x1))
        y0, y1 = (min(max(y, -1), self.ydots) for y in (y0, y1))
        steps = max(abs(x1 - x0), abs(y1 - y0), 1)
        for i in range(0, steps + 1, dash):
            t = i / steps
            self.dot(round(x0 + (x1 - x0) * t), round(y0 + (y1 - y0) * t), style)

    def rows(self) -> list[Text]:
        out = []
        for cy in range(self.height):
            text = Text()
            for cx in range(self.width):
                if self.ascii_only:
                    char = self._chars[cy][cx] or " "
                else:
                    bits = self._bits[cy][cx]
                    char = chr(0x2800 + bits) if bits else " "
                text.append(char, self._styles[cy][cx] or "")
            out.append(text)
        return out


def log2_positions(values: Sequence[int], width_dots: int) -> dict[int, int]:
    """x dot position of each concurrency on a log2 axis spanning the width."""
    distinct = sorted({v for v in values if v > 0})
    if not distinct:
        return {}
    lo, hi = math.log2(distinct[0]), math.log2(distinct[-1])
    span = hi - lo
    if span == 0:
        return {distinct[0]: width_dots // 2}
    return {v: round((math.log2(v) - lo) / span * (width_dots - 1)) for v in distinct}


def nice_max(value: float) -> float:
    """A round axis maximum >= value (1, 2, 2.5, 5 x 10^n)."""
    if value <= 0:
        return 1.0
    exp = math.floor(math.log10(value))
    for mult in (1, 2, 2.5, 5, 10):
        candidate = mult * 10**exp
        if candidate >= value:
            return float(candidate)
    return float(10 ** (exp + 1))


def short_number(value: float) -> str:
    if value >= 10_000:
        return f"{value / 1000:.0f}k"
    if value >= 1000:
        return f"{value / 1000:.1f}k"
    return f"{value:.0f}"
