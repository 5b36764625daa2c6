"""Plain-text tables for the headless commands (sweep results, history, comparisons)."""

from __future__ import annotations

from collections.abc import Sequence

from console.bench.compare import Comparison
from console.bench.energy import cost_per_million_output
from console.bench.fit_table import ColumnGroup, fit_table
from console.bench.models import StepResult
from console.bench.verdict import Verdict
from console.config_models import CostConfig


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
    rate = step.rate
    if rate is None:
        return str(step.concurrency)
    return f"{'inf' if rate == float('inf') else f'{rate:g}'}/s" + (
        f" c{step.concurrency}" if step.concurrency else "")


def level_words(step: StepResult) -> str:
    """The step's level in a sentence: 'concurrency 8' or 'request rate 4/s c64'."""
    return (f"concurrency {step.concurrency}" if step.rate is None
            else f"request rate {level_cell(step)}")


def step_cells(step: StepResult) -> list[str]:
    m = step.metrics
    status = step.status if not step.error else f"{step.status}: {step.error[:60]}"
    if m is not None and m.client_warning:
        status += " (client-bound?)"
    if m is not None and m.no_steady_state:
        status += " (no steady state)"
    if m is not None and (warmed := m.warmup_text()):
        status += f" ({warmed})"
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


def _slo_cells(step: StepResult) -> list[str]:
    slo = step.metrics.slo if step.metrics is not None else None
    if slo is None:
        return ["-", "-"]
    return [f"{slo.share:.0%}", number_cell(slo.goodput_rps, 2)]


def _energy_cells(step: StepResult, cost: CostConfig | None) -> list[str]:
    energy = step.energy
    if energy is None:
        return ["-"] * (4 if cost is not None else 3)
    cells = [number_cell(energy.mean_power_w_per_gpu, 0), number_cell(energy.output_tok_per_j, 3),
             number_cell(energy.j_per_output_token, 3)]
    if cost is not None:
        priced = cost_per_million_output(step, cost)
        total = priced.total if priced is not None else None
        cells.append("-" if total is None else f"{cost.currency}{total:,.2f}")
    return cells


def steps_table(steps: Sequence[StepResult], cost: CostConfig | None = None,
                width: int | None = None) -> str:
    """The steps, with goodput columns when the sweep had an SLO and energy columns when GPU
    power was sampled (placed before the free-text status); with `width`, in as many parts
    as it needs, conc and rep in each."""
    has_slo = any(s.metrics is not None and s.metrics.slo is not None for s in steps)
    has_energy = any(s.energy is not None for s in steps)
    extra: list[str] = []
    if has_slo:
        extra += ["SLO met", "goodput req/s"]
    if has_energy:
        extra += ["W/GPU", "out tok/J", "J/out tok"] + (["cost/Mtok"] if cost else [])
    headers = [*STEP_HEADERS[:-1], *extra, STEP_HEADERS[-1]]
    rows = []
    for step in steps:
        cells = step_cells(step)
        more = (_slo_cells(step) if has_slo else []) + (
            _energy_cells(step, cost) if has_energy else [])
        rows.append([*cells[:-1], *more, cells[-1]])
    if width is None:
        return table(headers, rows)
    groups = [ColumnGroup("", (header,), [[row[i]] for row in rows])
              for i, header in enumerate(headers) if i >= 2]
    return fit_table(headers[:2], [row[:2] for row in rows], groups, width)


COMPARE_METRICS = ("total tok/s", "output tok/s", "TTFT p50 ms", "TTFT p99 ms", "ITL p50 ms")
# Shown when either run has them (an SLO was given, GPU power was sampled).
OPTIONAL_METRICS = ("goodput req/s", "J/out tok")


NOISE_MARK = "~"
NOISE_LEGEND = (f"{NOISE_MARK} within run-to-run noise (the delta is at most twice the larger "
                "standard deviation of the repeats)")


def compare_metrics(comparison: Comparison) -> tuple[str, ...]:
    """The default columns plus the optional ones some row has a value for."""
    extra = tuple(
        name for name in OPTIONAL_METRICS
        if any(row.get(name).a is not None or row.get(name).b is not None
               for row in comparison.rows)
    )
    return COMPARE_METRICS + extra


def compare_table(comparison: Comparison, metrics: Sequence[str] | None = None,
                  width: int = 80) -> str:
    """Per metric A, B, Δ and Δ% under the metric's name, in as many parts as `width` needs
    (each with the conc column); a delta within the noise is marked, with its legend."""
    metrics = compare_metrics(comparison) if metrics is None else metrics
    groups = []
    noisy = False
    for name in metrics:
        cells = []
        for row in comparison.rows:
            d = row.get(name)
            noisy = noisy or bool(d.within_noise)
            mark = NOISE_MARK if d.within_noise else ""
            cells.append([number_cell(d.a), number_cell(d.b),
                          "-" if d.delta is None else f"{d.delta:+,.1f}",
                          "-" if d.pct is None else f"{d.pct:+.1f}%{mark}"])
        groups.append(ColumnGroup(name, ("A", "B", "\u0394", "\u0394%"), cells))
    keys = [[str(row.concurrency)] for row in comparison.rows]
    text = fit_table(["conc"], keys, groups, width)
    return f"{text}\n{_fill(NOISE_LEGEND, width)}" if noisy else text


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
        return "flags and environment: the same on both sides"
    return table(("flag or env", "A", "B"), [list(row) for row in differing])


def _fill(text: str, width: int | None) -> str:
    """A sentence wrapped between words to `width` (None: one line), continued indented."""
    if width is None:
        return text
    import textwrap

    return textwrap.fill(text, width, subsequent_indent="  ", break_on_hyphens=False)


def verdict_report(verdict: Verdict, differing: Sequence[tuple[str, str, str]],
                   width: int | None = None) -> str:
    """What `plateau ab` and `plateau compare` print: the sentence, the table, the flags;
    the sentences wrapped to `width`."""
    parts = [_fill(f"verdict: {verdict.sentence}", width)]
    if verdict.efficiency:
        parts.append(_fill(f"energy: {verdict.efficiency}", width))
    parts += ["", verdict_table(verdict)]
    parts += [_fill(f"note: {note}", width) for note in verdict.notes]
    parts += ["", flags_table(differing)]
    return "\n".join(parts)
