"""ServerStrip: live server stats with sparklines. Renders a `ServerStats`; does no I/O."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from rich.console import Console, ConsoleOptions, ConsoleRenderable, RichCast
from rich.segment import Segment
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.renderables.sparkline import Sparkline as SparklineBars
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Static

from console.hostnum import drawable_series, format_number
from console.logs.stats_snapshot import ServerStats

_ROWS = (
    ("gen", "gen_history"),
    ("running", "running_history"),
    ("queued", "queue_history"),
    ("usage", "usage_history"),
)


class _AsciiBars(SparklineBars):  # type: ignore[type-arg]
    BARS = "_.-:=+*#"

    def __rich_console__(self, console: Console, options: ConsoleOptions
                         ) -> Iterator[ConsoleRenderable | RichCast | str | Segment]:
        # Rows under the top of a tall sparkline are a hard-coded full block, and a sparkline
        # without data a hard-coded row of "▁".
        for segment in super().__rich_console__(console, options):
            if isinstance(segment, Segment) and ("█" in segment.text or "▁" in segment.text):
                text = segment.text.replace("█", "#").replace("▁", "_")
                yield Segment(text, segment.style, segment.control)
            else:
                yield segment


class StatRow(Widget):
    """One stat of the strip: its label, then its sparkline in the rest of the width.

    One widget, not a Horizontal of a Static and Textual's Sparkline: the strip was 13 widgets,
    a twentieth of the console's first frame (issue 42). Drawn as those were: the label left,
    cut to its width, on the row's first line; the sparkline (Textual's renderable, its colors
    from the same component classes) in the rest, as tall as the row."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "sparkline--max-color", "sparkline--min-color", "strip-row--label"}
    DEFAULT_CSS = """
    StatRow { height: 1; }
    StatRow > .sparkline--max-color { color: $primary; }
    StatRow > .sparkline--min-color { color: $primary 30%; }
    StatRow > .strip-row--label { width: 24; }
    """

    def __init__(self, *, ascii_only: bool = False, id: str | None = None) -> None:
        super().__init__(id=id)
        self.ascii_only = ascii_only
        self.label = Text()
        self.data: list[float] = []
        self._lines: list[list[Segment]] | None = None
        self._lines_size = (0, 0)  # the size `_lines` were drawn at

    def show(self, label: Text, data: list[float]) -> None:
        if label == self.label and data == self.data:
            return
        self.label, self.data = label, data
        self._lines = None
        self.refresh()

    @property
    def label_width(self) -> int:
        width = self.get_component_styles("strip-row--label").width
        return int(width.value) if width is not None else 24

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._lines = None

    def _on_resize(self, event: events.Resize) -> None:
        self._lines = None
        self.refresh()

    def render_line(self, y: int) -> Strip:
        # The compositor can paint the row at its new size before the Resize event reaches
        # it (a -tall-2 strip's rows grew from 1 to 2 lines and kept their one-line drawing
        # until the next stats update; a replay has none): the size is part of the cache.
        size = (self.size.width, self.size.height)
        if self._lines is None or self._lines_size != size:
            self._lines, self._lines_size = self._draw(), size
        return Strip(self._lines[y]) if y < len(self._lines) else Strip.blank(
            self.size.width, self.rich_style)

    def _draw(self) -> list[list[Segment]]:
        width, height = self.size
        label_width = min(self.label_width, width)
        base = self.rich_style
        label = self.label.copy()
        label.no_wrap, label.overflow, label.end = True, "crop", ""
        label.truncate(label_width, overflow="crop", pad=True)
        label.stylize_before(base)
        console = self.app.console
        first = list(label.render(console))
        blank = [Segment(" " * label_width, base)]
        spark = self._spark_lines(max(width - label_width, 0), height)
        return [[*(first if row == 0 else blank), *spark[row]] for row in range(height)]

    def _spark_lines(self, width: int, height: int) -> list[list[Segment]]:
        _, background = self.background_colors
        min_color = background + self.get_component_styles("sparkline--min-color").color
        max_color = background + self.get_component_styles("sparkline--max-color").color
        bars_type = _AsciiBars if self.ascii_only else SparklineBars
        bars = bars_type(self.data, width=width, height=height,
                         min_color=min_color.rich_color, max_color=max_color.rich_color,
                         summary_function=max)
        console = self.app.console
        options = console.options.update(width=width, height=height)
        lines = console.render_lines(bars, options, style=self.rich_style, pad=True)
        return [list(line) for line in lines]


class ServerStrip(Vertical):
    """Call `update_stats(stats)` at 1-2 Hz; identical snapshots are skipped."""

    DEFAULT_CSS = """
    ServerStrip { height: auto; }
    ServerStrip #strip-graph { height: 1; text-wrap: nowrap; }
    /* Full width but short of rows (class -dense): two stats a line, the graph line below. */
    ServerStrip.-dense {
        layout: grid; grid-size: 2; grid-columns: 1fr 1fr; grid-rows: 1; grid-gutter: 0 2;
    }
    ServerStrip.-dense > StatRow > .strip-row--label { width: 18; }
    ServerStrip.-dense #strip-graph { column-span: 2; }
    /* Beside a tall GPU panel (class -tall-2 / -tall-3): taller sparklines fill the box. */
    ServerStrip.-tall-2 > StatRow { height: 2; }
    ServerStrip.-tall-3 > StatRow { height: 3; }
    """

    def __init__(self, *, ascii_only: bool = False, id: str | None = None) -> None:
        super().__init__(id=id)
        self.ascii_only = ascii_only
        self._version: int | None = None
        self.stats = ServerStats()

    def compose(self) -> ComposeResult:
        for key, _history in _ROWS:
            yield StatRow(ascii_only=self.ascii_only, id=f"strip-{key}")
        yield Static(id="strip-graph", markup=False)

    def on_mount(self) -> None:
        self._render_stats(self.stats)

    def update_stats(self, stats: ServerStats) -> None:
        if stats.version == self._version and stats.source == self.stats.source:
            return
        self._version = stats.version
        self.stats = stats
        if self.is_mounted:
            self._render_stats(stats)

    def label(self, key: str) -> str:
        """The label shown for stat `key` (gen, running, queued, usage)."""
        return self.query_one(f"#strip-{key}", StatRow).label.plain

    def _render_stats(self, stats: ServerStats) -> None:
        labels = {
            "gen": _gen_label(stats),
            "running": f"running {_num(stats.running_reqs, '.0f')}",
            "queued": f"queued {_num(stats.queue_reqs, '.0f')}",
            "usage": f"token usage {_num(stats.token_usage, '.2f')}",
        }
        for key, history in _ROWS:
            # The core keeps histories drawable; a snapshot from elsewhere (a recording) may not.
            data = drawable_series(getattr(stats, history))
            # Textual draws a single value as a full bar; one point is no trend yet.
            self.query_one(f"#strip-{key}", StatRow).show(
                Text(labels[key]), list(data) if len(data) > 1 else [])
        self.query_one("#strip-graph", Static).update(self._graph_text(stats, self.ascii_only))

    @staticmethod
    def _graph_text(stats: ServerStats, ascii_only: bool = False) -> Text:
        on, off, on_mark, off_mark = ("on", "OFF", "#", ".") if ascii_only else (
            "on ✓", "OFF ✗", "▮", "▯"
        )
        text = Text("cuda graph ")
        if stats.cuda_graph is None:
            text.append("n/a", style="dim")
        elif stats.cuda_graph:
            text.append(on, style="bold green")
        else:
            text.append(off, style="bold red")
        history = stats.cuda_graph_history[-40:]
        if history:
            text.append("  ")
            for state in history:
                text.append(on_mark if state else off_mark, style="green" if state else "red")
        if stats.accept_len is not None:
            text.append(f"  accept len {format_number(stats.accept_len, '.2f')}")
        if stats.retractions:
            text.append(f"  retractions {stats.retractions}", style="bold yellow")
        text.append(f"  [{stats.source}]", style="dim")
        return text


def _gen_label(stats: ServerStats) -> str:
    """The current rate, or, when nothing has generated for a while, that it is idle and what
    the last rate was (never an old rate as if it were current)."""
    if stats.gen_idle:
        last = f", was {format_number(stats.gen_last, '.0f')}" if stats.gen_last else ""
        return f"gen idle{last}"
    return f"gen {_num(stats.gen_throughput, '.0f')} tok/s"


def _num(value: float | int | None, fmt: str) -> str:
    return format_number(value, fmt)
