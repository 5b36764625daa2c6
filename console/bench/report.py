"""Plain-text tables for the headless commands (sweep results, history, comparisons)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from console.bench.compare import Comparison
from console.bench.models import StepResult
from console.bench.verdict import Verdict
from console.store.models import RunSummary


def _f(value: float | None, digits: int = 1) -> str:
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


def step_cells(step: StepResult) -> list[str]:
    m = step.metrics
    status = step.status if not step.error else f"{step.status}: {step.error[:60]}"
    if m is not None and m.client_warning:
        status += " (client-bound?)"
    if m is not None and m.no_steady_state:
        status += " (no steady state)"
    if m is None:
        return [str(step.concurrency), str(step.repeat), *["-"] * 11, status]
    steady = m.steady.total_tok_s if m.steady is not None and m.steady.reached else None
    return [
        str(step.concurrency),
        str(step.repeat),
        _f(m.request_per_s, 2),
        _f(m.output_tok_s),
        _f(m.total_tok_s),
        _f(steady),
        _f(m.ttft_ms.p50),
        _f(m.ttft_ms.p99),
        _f(m.itl_ms.p50, 2),
        _f(m.tpot_ms.p50, 2),
        _f(m.e2e_ms.p50),
        _f(m.measured_concurrency),
        str(m.errors),
        status,
    ]


def steps_table(steps: Sequence[StepResult]) -> str:
    return table(STEP_HEADERS, [step_cells(s) for s in steps])


def history_table(runs: Sequence[RunSummary]) -> str:
    headers = (
        "run",
        "started",
        "status",
        "steps ok/failed",
        "best total tok/s",
        "best output tok/s",
        "engine",
        "host / profile / label",
    )
    rows = []
    for run in runs:
        meta = run.meta
        started = datetime.fromtimestamp(run.started_at).strftime("%Y-%m-%d %H:%M")
        where = " / ".join(x for x in (meta.host or meta.server_url, meta.profile, meta.label) if x)
        rows.append(
            [
                str(run.id),
                started,
                run.status,
                f"{run.steps_ok}/{run.steps_failed}",
                _f(run.best_total_tok_s),
                _f(run.best_output_tok_s),
                meta.engine,
                where or "-",
            ]
        )
    return table(headers, rows)


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
                _f(d.a),
                _f(d.b),
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
            _f(p.mean_a),
            _f(p.mean_b),
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
