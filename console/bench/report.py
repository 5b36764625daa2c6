"""Plain-text tables for the headless commands (sweep results, history, comparisons)."""

from __future__ import annotations

from collections.abc import Sequence

from console.bench.compare import Comparison
from console.bench.models import StepResult


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
    "TTFT p50 ms",
    "TTFT p99 ms",
    "ITL p50 ms",
    "TPOT p50 ms",
    "E2E p50 ms",
    "meas. conc",
    "errors",
    "status",
)


def step_cells(step: StepResult) -> list[str]:
    m = step.metrics
    status = step.status if not step.error else f"{step.status}: {step.error[:60]}"
    if m is not None and m.client_warning:
        status += " (client-bound?)"
    if m is None:
        return [str(step.concurrency), str(step.repeat), *["-"] * 10, status]
    return [
        str(step.concurrency),
        str(step.repeat),
        number_cell(m.request_per_s, 2),
        number_cell(m.output_tok_s),
        number_cell(m.total_tok_s),
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
