"""CompareTable: per-concurrency A vs B deltas (absolute and %), better/worse coloured,
"~" where the delta is within run-to-run noise. No I/O: `set_comparison(comparison)`."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import DataTable

from console.bench.compare import Comparison, Delta

DEFAULT_METRICS = ("total tok/s", "output tok/s", "TTFT p50 ms", "TTFT p99 ms", "ITL p50 ms")


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


def delta_text(delta: Delta) -> Text:
    if delta.delta is None:
        return Text("-")
    pct = f" ({delta.pct:+.1f}%)" if delta.pct is not None else ""
    text = Text(f"{delta.delta:+,.1f}{pct}")
    if delta.within_noise:
        text.append(" ~", style="dim")
        text.stylize("dim")
    elif delta.better is True:
        text.stylize("green")
    elif delta.better is False:
        text.stylize("red")
    return text


class CompareTable(DataTable[Text]):
    """A/B table; one row per concurrency measured in both runs."""

    DEFAULT_CSS = """
    CompareTable { height: auto; max-height: 20; }
    """

    def __init__(
        self,
        metrics: Sequence[str] = DEFAULT_METRICS,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes, zebra_stripes=True, cursor_type="row")
        self.metrics = tuple(metrics)
        self.comparison: Comparison | None = None

    def set_comparison(self, comparison: Comparison) -> None:
        self.comparison = comparison
        self.clear(columns=True)
        self.add_column(Text("conc", justify="right"), key="conc")
        for name in self.metrics:
            self.add_column(Text(f"A {name}", justify="right"), key=f"a:{name}")
            self.add_column(Text(f"B {name}", justify="right"), key=f"b:{name}")
            self.add_column(Text(f"\u0394 {name}", justify="right"), key=f"d:{name}")
        for row in comparison.rows:
            cells = [Text(str(row.concurrency), justify="right")]
            for name in self.metrics:
                d = row.get(name)
                cells += [Text(_num(d.a), justify="right"), Text(_num(d.b), justify="right")]
                cell = delta_text(d)
                cell.justify = "right"
                cells.append(cell)
            self.add_row(*cells, key=str(row.concurrency))
