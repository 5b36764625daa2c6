"""ServerStrip: live server stats with sparklines. Renders a `ServerStats`; does no I/O."""

from __future__ import annotations

from collections.abc import Iterator

from rich.console import Console, ConsoleOptions, ConsoleRenderable, RichCast
from rich.segment import Segment
from rich.text import Text
from textual.app import ComposeResult, RenderResult
from textual.containers import Horizontal, Vertical
from textual.renderables.sparkline import Sparkline as SparklineBars
from textual.widgets import Sparkline, Static

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


class AsciiSparkline(Sparkline):
    """Textual's sparkline drawn with ASCII levels (config `ui.ascii`)."""

    def render(self) -> RenderResult:
        bars = super().render()
        if isinstance(bars, SparklineBars):
            bars.__class__ = _AsciiBars  # same fields, only the glyphs differ
        return bars


class ServerStrip(Vertical):
    """Call `update_stats(stats)` at 1-2 Hz; identical snapshots are skipped."""

    DEFAULT_CSS = """
    ServerStrip { height: auto; }
    ServerStrip > Horizontal { height: 1; }
    ServerStrip .strip-label { width: 24; text-wrap: nowrap; }
    ServerStrip Sparkline { width: 1fr; height: 1; }
    ServerStrip #strip-graph { height: 1; text-wrap: nowrap; }
    /* Full width but short of rows (class -dense): two stats a line, the graph line below. */
    ServerStrip.-dense {
        layout: grid; grid-size: 2; grid-columns: 1fr 1fr; grid-rows: 1; grid-gutter: 0 2;
    }
    ServerStrip.-dense .strip-label { width: 18; }
    ServerStrip.-dense #strip-graph { column-span: 2; }
    /* Beside a tall GPU panel (class -tall-2 / -tall-3): taller sparklines fill the box. */
    ServerStrip.-tall-2 > Horizontal, ServerStrip.-tall-2 Sparkline { height: 2; }
    ServerStrip.-tall-3 > Horizontal, ServerStrip.-tall-3 Sparkline { height: 3; }
    """

    def __init__(self, *, ascii_only: bool = False, id: str | None = None) -> None:
        super().__init__(id=id)
        self.ascii_only = ascii_only
        self._version: int | None = None
        self.stats = ServerStats()

    def compose(self) -> ComposeResult:
        for key, _history in _ROWS:
            with Horizontal():
                yield Static(id=f"strip-{key}-label", classes="strip-label", markup=False)
                spark = AsciiSparkline if self.ascii_only else Sparkline
                yield spark([], id=f"strip-{key}-spark")
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

    def _render_stats(self, stats: ServerStats) -> None:
        labels = {
            "gen": _gen_label(stats),
            "running": f"running {_num(stats.running_reqs, '.0f')}",
            "queued": f"queued {_num(stats.queue_reqs, '.0f')}",
            "usage": f"token usage {_num(stats.token_usage, '.2f')}",
        }
        for key, history in _ROWS:
            self.query_one(f"#strip-{key}-label", Static).update(Text(labels[key]))
            # The core keeps histories drawable; a snapshot from elsewhere (a recording) may not.
            data = drawable_series(getattr(stats, history))
            # Textual draws a single value as a full bar; one point is no trend yet.
            self.query_one(f"#strip-{key}-spark", Sparkline).data = data if len(data) > 1 else []
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
