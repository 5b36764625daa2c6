"""Plain-text tables for the headless commands (sweep results, history, comparisons)."""

from __future__ import annotations

from collections.abc import Sequence

from console.bench.compare import Comparison
from console.bench.models import StepResult
from console.bench.verdict import Verdict


def number_cell(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Right-aligned columns (left-aligned for the last, free-text column)."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    last = len(headers) - 1

    def line(cells: Sequence[str]) -> str:
        parts = [
            c.ljust(widths[i]) if i == last else c.rjust(widths[i]) for i, c in enumerate(cells)
        ]
        return "  ".join(parts).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])


STEP_HEADERS = (
    "conc",
    "rep",
    "req/s",
    "output tok/s",
    "total tok/s",
    "steady tok/s",
    "TTFT p50 ms",
    "TTFT p99 ms",
    "ITL p50 ms",
    "TPOT p50 ms",
    "E2E p50 ms",
    "meas. conc",
    "errors",
    "status",
)


def level_cell(step: StepResult) -> str:
    """The step's x: its concurrency, or an open-loop step's offered rate ('4/s', 'inf/s',
    with its in-flight cap as '4/s c64')."""
    m = step.metrics
    if m is None or m.request_rate is None:
        return str(step.concurrency)
    rate = "inf" if m.request_rate == float("inf") else f"{m.request_rate:g}"
    return f"{rate}/s" + (f" c{m.max_concurrency}" if m.max_concurrency else "")


def step_cells(step: StepResult) -> list[str]:
    m = step.metrics
    status = step.status if not step.error else f"{step.status}: {step.error[:60]}"
    if m is not None and m.client_warning:
        status += " (client-bound?)"
    if m is not None and m.no_steady_state:
        status += " (no steady state)"
    if m is None:
        return [level_cell(step), str(step.repeat), *["-"] * 11, status]
    if m.completed == 0:  # no request finished: rates from cut-off streams measure nothing
        return [level_cell(step), str(step.repeat), *["-"] * 10, str(m.errors),
                f"{status} (no request completed)"]
    steady = m.steady.total_tok_s if m.steady is not None and m.steady.reached else None
    return [
        level_cell(step),
        str(step.repeat),
        number_cell(m.request_per_s, 2),
        number_cell(m.output_tok_s),
        number_cell(m.total_tok_s),
        number_cell(steady),
        number_cell(m.ttft_ms.p50),
        number_cell(m.ttft_ms.p99),
        number_cell(m.itl_ms.p50, 2),
        number_cell(m.tpot_ms.p50, 2),
        number_cell(m.e2e_ms.p50),
        number_cell(m.measured_concurrency),
        str(m.errors),
        status,
    ]


def steps_table(steps: Sequence[StepResult]) -> str:
    return table(STEP_HEADERS, [step_cells(s) for s in steps])


COMPARE_METRICS = ("total tok/s", "output tok/s", "TTFT p50 ms", "TTFT p99 ms", "ITL p50 ms")


def compare_table(comparison: Comparison, metrics: Sequence[str] = COMPARE_METRICS) -> str:
    headers = ["conc"]
    for name in metrics:
        headers += [f"A {name}", f"B {name}", "\u0394", "\u0394%"]
    headers.append("note")
    rows = []
    for row in comparison.rows:
        cells = [str(row.concurrency)]
        noisy = []
        for name in metrics:
            d = row.get(name)
            cells += [
                number_cell(d.a),
                number_cell(d.b),
                "-" if d.delta is None else f"{d.delta:+,.1f}",
                "-" if d.pct is None else f"{d.pct:+.1f}%",
            ]
            if d.within_noise:
                noisy.append(name)
        cells.append(f"within noise: {', '.join(noisy)}" if noisy else "")
        rows.append(cells)
    return table(headers, rows)


def verdict_table(verdict: Verdict) -> str:
    """Per concurrency: A and B (mean of repeats), the delta with its interval, the word."""
    headers = ["conc", "n A/B", f"A {verdict.metric}", f"B {verdict.metric}",
               f"\u0394% ({verdict.confidence:.0%} CI)", "verdict"]
    rows = [
        [
            str(p.concurrency),
            f"{p.n_a}/{p.n_b}",
            number_cell(p.mean_a),
            number_cell(p.mean_b),
            p.interval,
            p.word + (" (no steady state)" if p.no_steady_state else ""),
        ]
        for p in verdict.points
    ]
    return table(headers, rows)


def flags_table(differing: Sequence[tuple[str, str, str]]) -> str:
    if not differing:
        return "flags: the same on both sides"
    return table(("flag", "A", "B"), [list(row) for row in differing])


def verdict_report(verdict: Verdict, differing: Sequence[tuple[str, str, str]]) -> str:
    """What `plateau ab` and `plateau compare` print: the sentence, the table, the flags."""
    parts = [f"verdict: {verdict.sentence}", "", verdict_table(verdict)]
    parts += [f"note: {note}" for note in verdict.notes]
    parts += ["", flags_table(differing)]
    return "\n".join(parts)
