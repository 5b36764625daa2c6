"""CompareTable: per-concurrency A vs B deltas (absolute and %), better/worse coloured,
"~" where the delta is within run-to-run noise, and the verdict per concurrency (the delta of
total tok/s with its confidence interval and one word) when there is one. Goodput and the
energy figure (J per output token) join the five fixed metrics when either run has them (an
SLO was given, GPU power was sampled: console.bench.report.compare_metrics), each a group of
A, B and delta that widgets.split_table keeps whole (at 80 columns: a part of its own).
No I/O: `set_comparison(comparison, verdict)`."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import DataTable

from console.bench.compare import CompareRow, Comparison, Delta
from console.bench.report import COMPARE_METRICS, compare_metrics
from console.bench.verdict import PointVerdict, Verdict
from widgets.table_fill import fill_table

DEFAULT_METRICS = COMPARE_METRICS


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


WORD_STYLE = {"better": "green", "worse": "red", "within noise": "dim",
              "within boot noise": "dim", "no repeats": "dim"}


def verdict_text(point: PointVerdict | None) -> Text:
    """`+4.1% ± 1.2% better` (the word coloured); `-` where the level was not judged."""
    if point is None:
        return Text("-")
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
        metrics: Sequence[str] | None = None,  # None: the fixed five and those the runs have
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes, zebra_stripes=True, cursor_type="row")
        self.metrics = tuple(metrics) if metrics is not None else None
        self.comparison: Comparison | None = None
        self.verdict: Verdict | None = None

    def set_comparison(self, comparison: Comparison, verdict: Verdict | None = None) -> None:
        self.comparison = comparison
        self.verdict = verdict
        keys, labels, rows, _groups = comparison_cells(comparison, verdict, self.metrics)
        fill_table(self, labels, rows, keys=keys,
                   row_keys=[str(row.concurrency) for row in comparison.rows])


def comparison_cells(
    comparison: Comparison, verdict: Verdict | None, metrics: Sequence[str] | None = None,
) -> tuple[list[str], list[Text], list[list[Text]], list[int]]:
    """(column keys, labels, rows, group sizes after conc): the verdict, then A, B and the
    delta of each metric, read together (widgets.split_table keeps a group whole). `metrics`
    None: DEFAULT_METRICS, then goodput and J/out tok where a run has them."""
    metrics = compare_metrics(comparison) if metrics is None else metrics
    keys = ["conc"]
    labels = ["conc"]
    groups = []
    if verdict is not None:
        keys.append("verdict")
        labels.append(f"verdict ({verdict.metric})")
        groups.append(1)
    for name in metrics:
        keys += [f"a:{name}", f"b:{name}", f"d:{name}"]
        labels += [f"A {name}", f"B {name}", f"\u0394 {name}"]
        groups.append(3)
    rows = [_cells(row, verdict, metrics) for row in comparison.rows]
    return keys, [Text(label, justify="right") for label in labels], rows, groups


def _cells(row: CompareRow, verdict: Verdict | None, metrics: Sequence[str]) -> list[Text]:
    cells = [Text(str(row.concurrency), justify="right")]
    if verdict is not None:
        cells.append(verdict_text(verdict.point(row.concurrency)))
    for name in metrics:
        d = row.get(name)
        cells += [Text(_num(d.a), justify="right"), Text(_num(d.b), justify="right")]
        cell = delta_text(d)
        cell.justify = "right"
        cells.append(cell)
    return cells
