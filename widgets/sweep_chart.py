"""SweepChart: total and output tok/s vs concurrency (log2 x axis), p50/p99 latency alongside,
earlier runs overlaid (A/B/C in `$series-a/b/c`), the knee in words, an ASCII fallback.

No I/O: the app calls `set_runs([...])` for stored runs, then `start_live(label)` and
`add_step(step)` as steps finish. Output vs total is said in words, never by brightness alone
(the confusion the whole tool exists to end): the legend names both ("━ total tok/s ┄ output
tok/s"; ASCII: "A = total tok/s, a = output tok/s"), each line is labelled at its right end,
total is a solid line and output a dotted one. The table beside it shows the newest run: both
rates and the latencies per concurrency.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rich.style import Style
from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from console.hostnum import drawable
from widgets.sweep_canvas import Canvas, log2_positions, nice_max, short_number

if TYPE_CHECKING:  # the knee comes with the first finished step, not the empty first frame
    from console.bench.models import StepMetrics, StepResult
    from console.bench.pareto import ParetoPoint

SERIES_VARIABLES = ("series-a", "series-b", "series-c")
FALLBACK_COLOURS = ("#5B9BD5", "#E5A84B", "#B48EDC")
SERIES_LETTERS = ("A", "B", "C")
LATENCY_PANEL_WIDTH = 39
END_LABEL_WIDTH = 8  # " output " right of the plot, on the row where each line ends
Y_AXIS_WIDTH = 7
# Below this many rows a plot is unreadable: the chart says the knee in words instead.
CHART_MIN_HEIGHT = 6


@dataclass
class ChartRun:
    label: str
    steps: list[StepResult] = field(default_factory=list)

    def points(self, metric: str) -> list[tuple[int, float]]:
        """(concurrency, mean over repeats) of ok steps, sorted by concurrency."""
        return sorted((c, sum(v) / len(v)) for c, v in self._grouped(metric).items())

    def spread(self, metric: str) -> list[tuple[int, float, float]]:
        """(concurrency, lowest, highest) where there are two or more repeats."""
        grouped = self._grouped(metric)
        return sorted((c, min(v), max(v)) for c, v in grouped.items() if len(v) > 1)

    def _grouped(self, metric: str) -> dict[int, list[float]]:
        """The drawable values of `metric` of ok steps, by concurrency: a bench result read
        from the host may hold nan, inf or an absurd rate, which is never plotted."""
        grouped: dict[int, list[float]] = {}
        for step in self.steps:
            if step.status == "ok" and step.metrics is not None and step.concurrency > 0:
                value = drawable(_judged(step.metrics, metric))
                if value is not None:
                    grouped.setdefault(step.concurrency, []).append(value)
        return grouped


def _judged(metrics: StepMetrics, metric: str) -> float | None:
    """Throughputs as the knee and the verdict judge them (console.bench.knee.step_throughput:
    the steady-state window's where reached), so the chart's numbers are the knee's."""
    if metric == "total_tok_s":
        return metrics.headline_total_tok_s()
    if metric == "output_tok_s":
        return metrics.headline_output_tok_s()
    value = getattr(metrics, metric)
    return value if isinstance(value, float | int) else None


class SweepChart(Widget):
    """Throughput vs concurrency for up to three runs (older ones first, live one last)."""

    DEFAULT_CSS = """
    SweepChart { height: 16; min-height: 8; width: 1fr; }
    """

    ascii_only: reactive[bool] = reactive(False)
    # "throughput": tok/s vs concurrency; "pareto": per-user vs per-GPU tok/s (key p).
    mode: reactive[str] = reactive("throughput")

    def __init__(
        self,
        *,
        ascii_only: bool = False,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.runs: list[ChartRun] = []
        self.progress = ""
        self.history: list[ParetoPoint] = []  # the host's stored runs, for the Pareto mode
        self.set_reactive(SweepChart.ascii_only, ascii_only)

    # ------------------------------------------------------------------ data in

    def set_runs(self, runs: Sequence[tuple[str, Sequence[StepResult]]]) -> None:
        """Replace all series: [(label, steps), ...]; at most the last three are shown."""
        self.runs = [ChartRun(label, list(steps)) for label, steps in runs][-3:]
        self.refresh()

    def start_live(self, label: str) -> None:
        """Begin a new (live) series after the existing ones; older ones beyond 3 drop off."""
        self.runs = [*self.runs, ChartRun(label)][-3:]
        self.refresh()

    def add_step(self, step: StepResult) -> None:
        """Append a finished step to the live (last) series."""
        if not self.runs:
            self.runs.append(ChartRun("live"))
        self.runs[-1].steps.append(step)
        self.refresh()

    def show(self, steps: Sequence[StepResult], progress: str = "", label: str = "live") -> None:
        """Replace the last series' steps, its label ("live" while it runs, the run once it
        ended) and the progress note in one call."""
        if not self.runs:
            self.runs.append(ChartRun(label))
        self.runs[-1].label = label
        self.runs[-1].steps = list(steps)
        self.progress = progress
        self.refresh()

    def set_progress(self, progress: str) -> None:
        """A short status shown under the legend, e.g. 'step 3/9: concurrency 4'."""
        self.progress = progress
        self.refresh()

    def cycle_mode(self) -> str:
        """Throughput vs concurrency <-> the Pareto view; the mode now shown."""
        self.mode = "pareto" if self.mode == "throughput" else "throughput"
        return self.mode

    def set_history(self, points: Sequence[ParetoPoint]) -> None:
        """The host's stored runs as Pareto points (the frontier is drawn across them)."""
        self.history = list(points)
        self.refresh()

    def clear(self) -> None:
        self.runs = []
        self.progress = ""
        self.refresh()

    # ------------------------------------------------------------------ rendering

    def _colours(self) -> list[Style]:
        try:
            variables = self.app.theme_variables
        except Exception:  # not mounted
            variables = {}
        return [
            Style(color=variables.get(name, fallback))
            for name, fallback in zip(SERIES_VARIABLES, FALLBACK_COLOURS, strict=True)
        ]

    def render(self) -> Text:
        width = max(self.size.width, 20)
        height = max(self.size.height, 1)
        if height < CHART_MIN_HEIGHT:
            summary = render_summary(self.runs, width, height, self._colours(), self.progress)
            if self.mode != "pareto":
                return summary
            from widgets.pareto_chart import pareto_line  # p pressed: say so, even this low

            lines = [pareto_line([(r.label, r.steps) for r in self.runs], self.history, width),
                     *summary.split("\n")]
            return Text("\n").join(lines[:height])
        if self.mode == "pareto":
            from widgets.pareto_chart import render_pareto

            return render_pareto([(r.label, r.steps) for r in self.runs], self.history,
                                 width, height, self._colours(), self.ascii_only)
        return render_chart(
            self.runs, width, height, self._colours(), self.ascii_only, self.progress
        )


def _num(value: float | None, spec: str) -> str:
    """A latency, or n/a when nothing was measured (never a made-up 0)."""
    return "n/a" if value is None else format(value, spec)


def _latency_lines(run: ChartRun, width: int, dim: Style) -> list[Text]:
    """The newest run as a table: concurrency, total and output tok/s, TTFT p50/p99, ITL p50."""
    from console.bench.knee import is_rate_sweep, step_level

    lines = [Text(f"{run.label[: width - 1]}", style="bold")]
    axis = "rate" if is_rate_sweep(run.steps) else "conc"
    lines.append(Text(f"{axis:>4} {'total':>6} {'output':>6} {'TTFT p50/p99':<13} {'ITL':>6}",
                      style=dim))
    seen: dict[float, StepResult] = {}
    for step in run.steps:
        seen[step_level(step)] = step  # latest repeat per level (a rate step's is its rate)
    for level in sorted(seen):
        step = seen[level]
        conc = f"{level:g}" if axis == "rate" else str(step.concurrency)
        m = step.metrics
        if step.status != "ok" or m is None:
            lines.append(Text(f"{conc:>4}  failed", style="bold red"))
            continue
        ttft = "n/a" if m.ttft_ms.p50 is None else (
            f"{m.ttft_ms.p50:,.0f}/{_num(m.ttft_ms.p99, ',.0f')}ms")
        itl_ms = m.itl_ms.p50
        itl = "n/a" if itl_ms is None else f"{itl_ms:.{1 if itl_ms < 100 else 0}f}ms"
        rates = f"{m.headline_total_tok_s():>6,.0f} {m.headline_output_tok_s():>6,.0f}"
        lines.append(Text(f"{conc:>4} {rates} {ttft:<13} {itl:>6}"[:width]))
    return lines


def series_key(ascii_only: bool) -> list[tuple[str, str]]:
    """The legend's words for the two series: (text, "total" | "output")."""
    if ascii_only:
        return [("A = total tok/s", "total"), (", a = output tok/s", "output")]
    return [("━ total tok/s", "total"), ("  ┈ output tok/s", "output")]


def _short_knee(steps: Sequence[StepResult], *, terse: bool = False) -> str:
    from console.bench.knee import knee_of_steps

    knee = knee_of_steps(steps)
    gain = "" if knee.gain_pct is None else f"{knee.gain_pct:+.1f}%".replace("-", "\u2212")
    if knee.kind == "saturates":
        if terse:
            return f"knee \u2248 {knee.concurrency}"
        return f"knee \u2248 {knee.concurrency} ({gain} to {knee.next_concurrency})"
    if knee.kind == "declines":
        return f"peaks at {knee.concurrency}" + ("" if terse else f" ({gain} to "
                                                 f"{knee.next_concurrency})")
    if knee.kind == "scaling":
        return "still scaling" if terse else f"still scaling at {knee.concurrency} ({gain})"
    return "one step so far"


def _run_summary(index: int, run: ChartRun, colours: Sequence[Style], *, terse: bool) -> Text:
    peak_conc, peak = max(run.points("total_tok_s"), key=lambda p: p[1])
    peak_text = (f" {short_number(peak)}@{peak_conc} " if terse
                 else f" {short_number(peak)} tok/s @{peak_conc} \u00b7 ")
    return Text.assemble(
        (f"{SERIES_LETTERS[index]} ", colours[index % len(colours)] + Style(bold=True)),
        (run.label, "bold"),
        peak_text,
        _short_knee(run.steps, terse=terse),
    )


def _slo_knee(steps: Sequence[StepResult]) -> Any:
    """The SLO knee of a run swept with an SLO (its steps carry the objectives), or None."""
    from console.bench.slo import slo_knee

    given = next((s.metrics.slo.slo_ms for s in steps
                  if s.metrics is not None and s.metrics.slo is not None), None)
    return slo_knee(steps, given) if given else None


def slo_words(steps: Sequence[StepResult]) -> str:
    """"; SLO: meets up to 48 (goodput 3.1 req/s)" for a run with an SLO, else ""."""
    knee = _slo_knee(steps)
    if knee is None:
        return ""
    rates = [s.metrics.slo.goodput_rps for s in steps
             if s.status == "ok" and s.metrics is not None and s.metrics.slo is not None]
    best = f", best goodput {max(rates):,.2f} req/s" if rates else ""
    return f"; {knee.sentence.split(';')[0]}{best}"


def slo_limit(steps: Sequence[StepResult]) -> int | None:
    """The highest concurrency meeting the run's SLO (the chart's dotted vertical), or None."""
    knee = _slo_knee(steps)
    return None if knee is None else knee.concurrency


def render_summary(
    runs: Sequence[ChartRun],
    width: int,
    height: int,
    colours: Sequence[Style],
    progress: str = "",
) -> Text:
    """The chart in words for short terminals: per run its peak and knee, newest last.

    One row packs everything: progress first, then each run, tersely or without the progress
    when that is what fits. More rows give each run a line of its own.
    """
    dim = Style(dim=True)
    shown = [(i, run) for i, run in enumerate(runs) if run.points("total_tok_s")]
    head = Text(progress, style=dim) if progress else None
    if not shown:
        text = head or Text("no finished sweep step yet \u2014 press s", style=dim)
        text.truncate(width)
        return text
    full = [_run_summary(i, run, colours, terse=False) for i, run in shown]
    if height == 1:
        terse = [_run_summary(i, run, colours, terse=True) for i, run in shown]
        sep = Text(" \u00b7 ")
        choices = [
            sep.join([*([head] if head else []), *full]),
            sep.join([*([head] if head else []), *terse]),
            sep.join(terse),
        ]
        line = next((c for c in choices if c.cell_len <= width), choices[-1])
        line.truncate(width, overflow="ellipsis")
        return line
    lines = [*([head] if head else []), *full][-height:]
    for line in lines:
        line.truncate(width, overflow="ellipsis")
    return Text("\n").join(lines)


def _end_labels(
    run: ChartRun, colour: Style, canvas: Canvas, y_of: Callable[[float], int]
) -> dict[int, Text]:
    """"total" and "output" beside the row where the newest run's lines end (direct labels:
    the axis says which line is which in words)."""
    per_row = 1 if canvas.ascii_only else 4
    labels: dict[int, Text] = {}
    for metric, word, style in (("total_tok_s", "total", colour + Style(bold=True)),
                                ("output_tok_s", "output", colour + Style(dim=True))):
        points = run.points(metric)
        if not points:
            continue
        row = (canvas.ydots - 1 - y_of(points[-1][1])) // per_row
        while row in labels and row + 1 < canvas.height:
            row += 1  # the two ends share a row: output goes just below
        if row not in labels:
            labels[row] = Text.assemble(" ", (word.ljust(END_LABEL_WIDTH - 1), style))
    return labels


def render_chart(
    runs: Sequence[ChartRun],
    width: int,
    height: int,
    colours: Sequence[Style],
    ascii_only: bool = False,
    progress: str = "",
) -> Text:
    dim = Style(dim=True)
    legend = Text("tok/s vs concurrency (log2)  ", style="bold")
    for index, run in enumerate(runs):
        colour = colours[index % len(colours)]
        mark = SERIES_LETTERS[index] if ascii_only else "\u2501"
        legend.append(f"{mark} ", colour)
        legend.append(f"{SERIES_LETTERS[index]}: {run.label}  ")
    first = colours[0]
    for text, series in series_key(ascii_only):
        legend.append(text, first + Style(bold=True) if series == "total" else first + dim)
    from console.bench.knee import knee_of_steps  # with the first step, not the empty chart

    knees = [
        Text.assemble(
            (f"{SERIES_LETTERS[i]} ", colours[i % len(colours)]),
            knee_of_steps(run.steps).sentence + slo_words(run.steps),
        )
        for i, run in enumerate(runs)
        if run.steps
    ]
    if not runs or not any(run.points("total_tok_s") for run in runs):
        body = Text(progress or "waiting for the first finished step\u2026", style=dim)
        return Text("\n").join([legend, body])

    if progress:
        knees.insert(0, Text(progress, style=dim))
    knee_rows = knees[-max(1, min(len(knees), height - 5)) :]
    chart_height = max(2, height - 2 - len(knee_rows))  # legend + x axis + knees
    show_latency = width >= 80
    plot_width = (width - Y_AXIS_WIDTH - END_LABEL_WIDTH
                  - (LATENCY_PANEL_WIDTH + 1 if show_latency else 0))
    canvas = Canvas(plot_width, chart_height, ascii_only=ascii_only)

    all_conc = [c for run in runs for c, _ in run.points("total_tok_s")]
    xs = log2_positions(all_conc, canvas.xdots)
    top = nice_max(max(v for run in runs for _, v in run.points("total_tok_s")))

    def y_of(value: float) -> int:
        return round(value / top * (canvas.ydots - 1))

    slo_mark = slo_limit(runs[-1].steps)
    if slo_mark is not None and slo_mark in xs:  # the newest run meets its SLO up to here
        canvas.line(xs[slo_mark], 0, xs[slo_mark], canvas.ydots - 1, dim, dash=3)
        legend.append(f"  ┆ SLO met up to {slo_mark}", dim)
    for index, run in enumerate(runs):
        colour = colours[index % len(colours)]
        faint = colour + Style(dim=True)
        letter = SERIES_LETTERS[index]
        for c, low, high in run.spread("total_tok_s"):  # repeats: a whisker low..high
            canvas.line(xs[c], y_of(low), xs[c], y_of(high), faint)
        for metric, style, char, dash in (("output_tok_s", faint, letter.lower(), 2),
                                          ("total_tok_s", colour, letter, 1)):  # fmt: skip
            pts = [(xs[c], y_of(v)) for c, v in run.points(metric)]
            for (x0, y0), (x1, y1) in itertools.pairwise(pts):
                canvas.line(x0, y0, x1, y1, style, dash=dash)
            for x, y in pts:
                canvas.marker(x, y, style + Style(bold=True), char)

    rows = canvas.rows()
    ends = _end_labels(runs[-1], colours[(len(runs) - 1) % len(colours)], canvas, y_of)
    latency = _latency_lines(runs[-1], LATENCY_PANEL_WIDTH, dim) if show_latency else []
    lines = [legend]
    for row_index, row in enumerate(rows):
        if row_index == 0:
            label = short_number(top)
        elif row_index == len(rows) - 1:
            label = "0"
        elif row_index == len(rows) // 2:
            label = short_number(top / 2)
        else:
            label = ""
        line = Text(f"{label:>{Y_AXIS_WIDTH - 2}} \u2502" if not ascii_only
                    else f"{label:>{Y_AXIS_WIDTH - 2}} |", style=dim)  # fmt: skip
        line.append_text(row)
        line.append_text(ends.get(row_index, Text(" " * END_LABEL_WIDTH)))
        if show_latency:
            line.append(" ")
            if row_index < len(latency):
                line.append_text(latency[row_index])
        lines.append(line)
    # x axis: tick labels at their log2 positions
    cells_per_dot = 1 if ascii_only else 2
    axis = [" "] * plot_width
    for conc, x in sorted(xs.items()):
        text = str(conc)
        start = min(max(0, x // cells_per_dot - len(text) // 2), plot_width - len(text))
        if all(ch == " " for ch in axis[max(0, start - 1) : start + len(text) + 1]):
            axis[start : start + len(text)] = list(text)
    lines.append(Text(" " * Y_AXIS_WIDTH + "".join(axis), style=dim))
    lines.extend(knee_rows)
    return Text("\n").join(lines[:height])
