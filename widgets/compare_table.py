"""CompareTable: per-concurrency A vs B deltas (absolute and %), better/worse coloured,
"~" where the delta is within run-to-run noise, and the verdict per concurrency (the delta of
total tok/s with its confidence interval and one word) when there is one. Goodput and the
energy figure (J per output token) join the five fixed metrics when either run has them (an
SLO was given, GPU power was sampled: console.bench.report.compare_metrics).

Narrower than WIDE_FROM columns (80x24) each metric is one column, B's change in %, under a
short name (`tot Δ%`, `J/tok`), so the table fits; wider, A, B and the delta each.
No I/O: `set_comparison(comparison, verdict)`."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import DataTable

from console.bench.compare import Comparison, Delta
from console.bench.report import compare_metrics
from console.bench.verdict import PointVerdict, Verdict
from widgets.table_fill import fill_table

DEFAULT_METRICS = ("total tok/s", "output tok/s", "TTFT p50 ms", "TTFT p99 ms", "ITL p50 ms")
WIDE_FROM = 120  # columns: A, B and the delta of each metric from here; B's % below
# The narrow table's headers: seven columns of B's % change fit 80 columns with the verdict.
SHORT = {"total tok/s": "tot \u0394%", "output tok/s": "out \u0394%", "TTFT p50 ms": "TTFT50",
         "TTFT p99 ms": "TTFT99", "ITL p50 ms": "ITL50", "goodput req/s": "goodput",
         "J/out tok": "J/tok"}


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


def delta_text(delta: Delta, *, pct_only: bool = False) -> Text:
    if delta.delta is None or (pct_only and delta.pct is None):
        return Text("-")
    pct = f" ({delta.pct:+.1f}%)" if delta.pct is not None else ""
    text = Text(f"{delta.pct:+.1f}%" if pct_only else f"{delta.delta:+,.1f}{pct}")
    if delta.within_noise:
        text.append(" ~", style="dim")
        text.stylize("dim")
    elif delta.better is True:
        text.stylize("green")
    elif delta.better is False:
        text.stylize("red")
    return text


WORD_STYLE = {"better": "green", "worse": "red", "within noise": "dim", "no repeats": "dim"}


def verdict_text(point: PointVerdict | None, *, short: bool = False) -> Text:
    """`+4.1% ± 1.2% better` (the word coloured), `+4.1±1.2 better` when `short`; `-` where
    the level was not judged."""
    if point is None:
        return Text("-")
    if short and point.half_width_pct is not None:
        text = Text(f"{point.delta_pct:+.1f}\u00b1{point.half_width_pct:.1f} ")
    else:
        text = Text(f"{point.interval} ")
    text.append(point.word, style=WORD_STYLE.get(point.word, ""))
    if point.no_steady_state:
        text.append(" !", style="yellow")
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
        self.fixed = metrics is not DEFAULT_METRICS  # a caller's own list: no optional ones
        self.shown: tuple[str, ...] = self.metrics
        self.narrow = False
        self.comparison: Comparison | None = None
        self.verdict: Verdict | None = None

    def _width(self) -> int:
        try:
            return self.size.width or self.app.size.width
        except Exception:  # not mounted: the wide form
            return WIDE_FROM

    def on_resize(self) -> None:
        if self.comparison is not None and (self._width() < WIDE_FROM) != self.narrow:
            self.set_comparison(self.comparison, self.verdict)

    def set_comparison(self, comparison: Comparison, verdict: Verdict | None = None) -> None:
        self.comparison = comparison
        self.verdict = verdict
        self.narrow = self._width() < WIDE_FROM
        self.shown = self.metrics if self.fixed else compare_metrics(comparison)
        keys = ["conc"]
        labels = ["conc"]
        if verdict is not None:
            keys.append("verdict")
            labels.append("verdict" if self.narrow else f"verdict ({verdict.metric})")
        for name in self.shown:
            if self.narrow:
                if verdict is not None and name == verdict.metric:
                    continue  # the verdict column is its change, with the interval
                keys.append(f"d:{name}")
                labels.append(SHORT.get(name, name))
            else:
                keys += [f"a:{name}", f"b:{name}", f"d:{name}"]
                labels += [f"A {name}", f"B {name}", f"\u0394 {name}"]
        rows = [self._cells(row) for row in comparison.rows]
        fill_table(
            self,
            [Text(label, justify="right") for label in labels],
            rows,
            keys=keys,
            row_keys=[str(row.concurrency) for row in comparison.rows],
        )

    def _cells(self, row: object) -> list[Text]:
        cells = [Text(str(row.concurrency), justify="right")]  # type: ignore[attr-defined]
        if self.verdict is not None:
            cells.append(verdict_text(self.verdict.point(row.concurrency),  # type: ignore[attr-defined]
                                      short=self.narrow))
        for name in self.shown:
            d = row.get(name)  # type: ignore[attr-defined]
            if self.narrow:
                if self.verdict is not None and name == self.verdict.metric:
                    continue
            else:
                cells += [Text(_num(d.a), justify="right"), Text(_num(d.b), justify="right")]
            cell = delta_text(d, pct_only=self.narrow)
            cell.justify = "right"
            cells.append(cell)
        return cells
