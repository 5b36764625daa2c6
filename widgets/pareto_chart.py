"""The sweep chart's Pareto mode: per-user output tok/s (x) against total tok/s per GPU (y), one
point per concurrency for each shown run (A/B/C in their colours, the point labelled with its
concurrency), the host's other stored runs as faint dots, and the frontier across all of them
drawn as a line through the points nothing beats on both axes (console/bench/pareto.py).

Pure rendering (no Textual import), like widgets/sweep_canvas.py.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from rich.style import Style
from rich.text import Text

from console.bench.models import StepResult
from console.bench.pareto import ParetoPoint, frontier, pareto_points, run_gpus
from console.hostnum import drawable
from widgets.sweep_canvas import Canvas, nice_max, short_number

Y_AXIS_WIDTH = 7
LETTERS = ("A", "B", "C")


def _axis_labels(top: float, rows: int, index: int) -> str:
    if index == 0:
        return short_number(top)
    if index == rows - 1:
        return "0"
    if index == rows // 2:
        return short_number(top / 2)
    return ""


def render_pareto(
    runs: Sequence[tuple[str, Sequence[StepResult]]],
    history: Sequence[ParetoPoint],
    width: int,
    height: int,
    colours: Sequence[Style],
    ascii_only: bool = False,
) -> Text:
    dim = Style(dim=True)
    shown = [pareto_points(steps, gpus=run_gpus(steps), label=label) for label, steps in runs]
    gpus = max((run_gpus(steps) for _, steps in runs), default=1)
    per = f"per GPU ({gpus} GPUs)" if gpus > 1 else "per server"
    legend = Text(f"Pareto: per-user output tok/s \u2192  vs  total tok/s {per} \u2191  ",
                  style="bold")
    for index, (label, _) in enumerate(runs):
        legend.append(f"{LETTERS[index]} ", colours[index % len(colours)] + Style(bold=True))
        legend.append(f"{label}  ")
    everything = [p for pts in shown for p in pts] + [
        p for p in history if drawable(p.per_user_tok_s) and drawable(p.per_gpu_tok_s)]
    if not everything:
        return Text("\n").join([legend, Text("no finished step with a TPOT yet", style=dim)])
    front = frontier(everything)
    legend.append("\u2500 frontier" if not ascii_only else "* frontier", Style(bold=True))
    if history:
        legend.append(f"  \u00b7 {len(history)} stored point(s) of this host", dim)
    plot_width = max(10, width - Y_AXIS_WIDTH - 1)
    canvas = Canvas(plot_width, max(2, height - 3), ascii_only=ascii_only)
    x_top = nice_max(max(p.per_user_tok_s for p in everything))
    y_top = nice_max(max(p.per_gpu_tok_s for p in everything))

    def xy(point: ParetoPoint) -> tuple[int, int]:
        return (round(point.per_user_tok_s / x_top * (canvas.xdots - 1)),
                round(point.per_gpu_tok_s / y_top * (canvas.ydots - 1)))

    for point in history:
        canvas.dot(*xy(point), dim, ".")
    for (x0, y0), (x1, y1) in itertools.pairwise(xy(p) for p in front):
        canvas.line(x0, y0, x1, y1, Style(bold=True), dash=2)
    for index, points in enumerate(shown):
        colour = colours[index % len(colours)] + Style(bold=True)
        for point in points:
            on_front = point in front
            canvas.marker(*xy(point), colour, "*" if on_front and ascii_only else LETTERS[index])
    lines = [legend]
    for row_index, row in enumerate(canvas.rows()):
        label = _axis_labels(y_top, canvas.height, row_index)
        line = Text(f"{label:>{Y_AXIS_WIDTH - 2}} {'|' if ascii_only else chr(0x2502)}",
                    style=dim)
        line.append_text(row)
        lines.append(line)
    lines.append(Text(" " * Y_AXIS_WIDTH + f"0{'per-user tok/s':^{plot_width - 8}}"
                      f"{short_number(x_top):>6}", style=dim))
    newest = shown[-1] if shown else []
    if newest:
        lines.append(Text(_ellipsized(f"{LETTERS[len(shown) - 1]} {_newest_text(newest, front)}",
                                      width)))
    out = Text("\n").join(lines[:height])
    return out


def _ellipsized(text: str, width: int) -> str:
    return text if len(text) <= width else text[:max(1, width - 1)] + "\u2026"


def _newest_text(newest: Sequence[ParetoPoint], front: Sequence[ParetoPoint]) -> str:
    """Where the newest run stands: the levels on the frontier first (what a narrow line
    must keep), then each level's per-user/per-GPU tok/s."""
    on = [str(p.concurrency) for p in newest if p in front]
    head = f"frontier at {', '.join(on)}" if on else "(none on the frontier)"
    where = ", ".join(f"{p.concurrency}: {p.per_user_tok_s:,.0f}/{p.per_gpu_tok_s:,.0f}"
                      for p in newest)
    return f"{head}  \u00b7  conc: user/GPU tok/s  {where}"


def pareto_line(runs: Sequence[tuple[str, Sequence[StepResult]]],
                history: Sequence[ParetoPoint], width: int) -> Text:
    """The Pareto mode in one line, for a chart too low to plot it (80x24's dashboard): the
    newest run's frontier levels and points, and that z shows the plot."""
    shown = [pareto_points(steps, gpus=run_gpus(steps), label=label) for label, steps in runs]
    usable = [p for p in history if drawable(p.per_user_tok_s) and drawable(p.per_gpu_tok_s)]
    newest = shown[-1] if shown else []
    if not newest:
        return Text(_ellipsized("Pareto (p): no finished step with a TPOT yet", width))
    front = frontier([p for pts in shown for p in pts] + usable)
    said = f"Pareto (p, z: plot): {LETTERS[len(shown) - 1]} {_newest_text(newest, front)}"
    return Text(_ellipsized(said, width))
