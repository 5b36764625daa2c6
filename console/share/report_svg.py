"""Charts as inline SVG, drawn here (no JavaScript, no network): a line chart of series
against concurrency, and an interval chart for an A/B's per-level deltas.

Every label may carry host-written text (a profile name, a run label): each goes through
`html.escape` before it reaches the markup. A point is a `<circle class="pt">` with a
`<title>` (the browser's own hover tooltip), so a test can count what was drawn.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from console.share.html_text import escape

WIDTH, HEIGHT = 640, 320
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 28, 44
# Colour-blind-safe (Okabe-Ito); dashes tell a run's second metric apart in print.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")


@dataclass(frozen=True)
class Series:
    name: str
    points: Sequence[tuple[float, float]]
    color: int = 0  # index into PALETTE
    dashed: bool = False


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high] (steps of 1, 2 or 5 x 10^k)."""
    if high <= low:
        high = low + 1.0
    raw = (high - low) / max(1, count)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.floor(low / step) * step
    ticks, value = [], first
    while value <= high + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    if ticks[-1] < high:
        ticks.append(round(ticks[-1] + step, 10))
    return ticks


def fmt(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 10000:
        return f"{value / 1000:,.0f}k"
    if abs(value) >= 100 or float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:,.3g}"


class _Frame:
    """Data to pixels: x on a log2 scale (concurrency doubles per level), y linear from 0
    unless the values go negative."""

    def __init__(self, xs: list[float], ys: list[float], log_x: bool) -> None:
        self.log_x = log_x
        fx = [self._fx(x) for x in xs] or [0.0]
        self.x0, self.x1 = min(fx), max(fx)
        # Room either side so the first and last points clear the axes.
        pad = max(self.x1 - self.x0, 1.0) * 0.05
        self.x0, self.x1 = self.x0 - pad, self.x1 + pad
        self.yticks = nice_ticks(min([0.0, *ys]), max([0.0, *ys]))
        self.y0, self.y1 = self.yticks[0], self.yticks[-1]

    def _fx(self, x: float) -> float:
        return math.log2(x) if self.log_x and x > 0 else x

    def px(self, x: float) -> float:
        span = WIDTH - LEFT - RIGHT
        return LEFT + (self._fx(x) - self.x0) / (self.x1 - self.x0) * span

    def py(self, y: float) -> float:
        span = HEIGHT - TOP - BOTTOM
        return HEIGHT - BOTTOM - (y - self.y0) / (self.y1 - self.y0) * span


def _axes(frame: _Frame, xticks: Sequence[float], x_label: str, y_label: str) -> list[str]:
    out = ['<g class="axes" font-size="11" fill="#333">']
    for y in frame.yticks:
        py = frame.py(y)
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{py:.1f}" y2="{py:.1f}" '
                   f'stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 6}" y="{py + 4:.1f}" text-anchor="end">{fmt(y)}</text>')
    for x in xticks:
        px = frame.px(x)
        out.append(f'<text x="{px:.1f}" y="{HEIGHT - BOTTOM + 16}" '
                   f'text-anchor="middle">{fmt(x)}</text>')
    out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{HEIGHT - BOTTOM}" '
               f'y2="{HEIGHT - BOTTOM}" stroke="#333"/>')
    out.append(f'<line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{HEIGHT - BOTTOM}" '
               f'stroke="#333"/>')
    out.append(f'<text x="{(LEFT + WIDTH - RIGHT) / 2:.0f}" y="{HEIGHT - 8}" '
               f'text-anchor="middle">{escape(x_label)}</text>')
    out.append(f'<text transform="translate(14 {(TOP + HEIGHT - BOTTOM) / 2:.0f}) rotate(-90)" '
               f'text-anchor="middle">{escape(y_label)}</text>')
    out.append("</g>")
    return out


def _open(chart_id: str, title: str, kind: str) -> str:
    return (f'<svg class="chart" id="{escape(chart_id)}" data-kind="{kind}" role="img" '
            f'viewBox="0 0 {WIDTH} {HEIGHT}" xmlns="http://www.w3.org/2000/svg" '
            f'preserveAspectRatio="xMidYMid meet"><title>{escape(title)}</title>')


def legend(series: Sequence[Series]) -> str:
    """An HTML legend under the chart (wraps on a phone, unlike text inside the SVG)."""
    items = []
    for s in series:
        color = PALETTE[s.color % len(PALETTE)]
        style = "dashed" if s.dashed else "solid"
        items.append(f'<li><span class="swatch" style="border-top: 3px {style} {color}">'
                     f'</span>{escape(s.name)}</li>')
    return f'<ul class="legend">{"".join(items)}</ul>'


def line_chart(chart_id: str, title: str, series: Sequence[Series], *, x_label: str,
               y_label: str, log_x: bool = True) -> str:
    xs = [x for s in series for x, _ in s.points]
    ys = [y for s in series for _, y in s.points]
    frame = _Frame(xs, ys, log_x)
    out = [_open(chart_id, title, "line"), *_axes(frame, sorted(set(xs)), x_label, y_label)]
    for number, s in enumerate(series):
        color = PALETTE[s.color % len(PALETTE)]
        path = " ".join(f"{frame.px(x):.1f},{frame.py(y):.1f}" for x, y in s.points)
        dash = ' stroke-dasharray="6 4"' if s.dashed else ""
        out.append(f'<g class="series" data-series="{number}" data-name="{escape(s.name)}">')
        if len(s.points) > 1:
            out.append(f'<polyline points="{path}" fill="none" stroke="{color}" '
                       f'stroke-width="2"{dash}/>')
        for x, y in s.points:
            out.append(f'<circle class="pt" cx="{frame.px(x):.1f}" cy="{frame.py(y):.1f}" '
                       f'r="3.5" fill="{color}" data-x="{x:g}" data-y="{y:.6g}">'
                       f'<title>{escape(s.name)}: {fmt(x)} \u2192 {fmt(y)}</title></circle>')
        out.append("</g>")
    out.append("</svg>")
    return "".join(out) + legend(series)


@dataclass(frozen=True)
class Interval:
    x: float
    delta: float
    half: float | None  # None: no interval (too few repeats)
    word: str


def interval_chart(chart_id: str, title: str, points: Sequence[Interval], *,
                   x_label: str, y_label: str) -> str:
    """B's delta vs A per level, with its confidence interval as a bar; 0 is marked."""
    ys = [p.delta + sign * (p.half or 0.0) for p in points for sign in (-1, 1)]
    frame = _Frame([p.x for p in points], ys, True)
    out = [_open(chart_id, title, "interval"),
           *_axes(frame, sorted({p.x for p in points}), x_label, y_label)]
    zero = frame.py(0.0)
    out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{zero:.1f}" y2="{zero:.1f}" '
               f'stroke="#333" stroke-dasharray="3 3"/>')
    colors = {"better": PALETTE[2], "worse": PALETTE[1]}
    for p in points:
        px, color = frame.px(p.x), colors.get(p.word, "#666")
        if p.half is not None:
            lo, hi = frame.py(p.delta - p.half), frame.py(p.delta + p.half)
            out.append(f'<line class="ci" x1="{px:.1f}" x2="{px:.1f}" y1="{lo:.1f}" '
                       f'y2="{hi:.1f}" stroke="{color}" stroke-width="2"/>')
        half = f" \u00b1 {p.half:.1f}" if p.half is not None else ""
        out.append(f'<circle class="pt" cx="{px:.1f}" cy="{frame.py(p.delta):.1f}" r="4" '
                   f'fill="{color}" data-x="{p.x:g}" data-y="{p.delta:.6g}"><title>'
                   f'{fmt(p.x)}: {p.delta:+.1f}%{half}% ({escape(p.word)})</title></circle>')
    out.append("</svg>")
    return "".join(out)
