"""Export a stored run as CSV, JSON or Markdown. Column names say output vs total tok/s."""

from __future__ import annotations

import csv
import io
import json
import math
from datetime import UTC, datetime
from typing import Any

from console.bench.knee import is_rate_sweep, knee_of_steps
from console.bench.models import StepResult
from console.bench.report import level_words
from console.bench.summary import run_summary
from console.store.models import RunRecord
from console.text import sanitize_lines

# (column, getter) for one step; used by CSV and Markdown alike.
COLUMNS: tuple[tuple[str, Any], ...] = (
    ("step", lambda s: s.index),
    ("concurrency", lambda s: s.concurrency),
    ("repeat", lambda s: s.repeat),
    ("status", lambda s: s.status),
    ("completed", lambda s: s.metrics and s.metrics.completed),
    ("errors", lambda s: s.metrics and s.metrics.errors),
    ("request_per_s", lambda s: s.metrics and s.metrics.request_per_s),
    ("input_tok_s", lambda s: s.metrics and s.metrics.input_tok_s),
    ("output_tok_s", lambda s: s.metrics and s.metrics.output_tok_s),
    ("total_tok_s", lambda s: s.metrics and s.metrics.total_tok_s),
    ("measured_concurrency", lambda s: s.metrics and s.metrics.measured_concurrency),
    ("ttft_p50_ms", lambda s: s.metrics and s.metrics.ttft_ms.p50),
    ("ttft_p99_ms", lambda s: s.metrics and s.metrics.ttft_ms.p99),
    ("itl_p50_ms", lambda s: s.metrics and s.metrics.itl_ms.p50),
    ("itl_p99_ms", lambda s: s.metrics and s.metrics.itl_ms.p99),
    ("tpot_p50_ms", lambda s: s.metrics and s.metrics.tpot_ms.p50),
    ("e2e_p50_ms", lambda s: s.metrics and s.metrics.e2e_ms.p50),
    ("e2e_p99_ms", lambda s: s.metrics and s.metrics.e2e_ms.p99),
    ("slo_share", lambda s: s.metrics and s.metrics.slo and s.metrics.slo.share),
    ("goodput_rps", lambda s: s.metrics and s.metrics.slo and s.metrics.slo.goodput_rps),
    ("power_w_per_gpu", lambda s: s.energy and s.energy.mean_power_w_per_gpu),
    ("output_tok_per_j", lambda s: s.energy and s.energy.output_tok_per_j),
    ("j_per_output_token", lambda s: s.energy and s.energy.j_per_output_token),
    ("error", lambda s: s.error or ""),
    # Last, so the columns before keep their places: an open-loop step's offered rate (kept
    # by the step itself, so a failed step has it too).
    ("request_rate", lambda s: s.rate),
    # The steady-state window's throughput, which every view judges a step by, and whether the
    # step reached one ("no": only the whole-step figures exist; empty: not checked).
    ("steady_total_tok_s", lambda s: _steady(s) and s.metrics.steady.total_tok_s),
    ("steady_output_tok_s", lambda s: _steady(s) and s.metrics.steady.output_tok_s),
    ("steady_reached", lambda s: s.metrics and s.metrics.steady
     and ("yes" if s.metrics.steady.reached else "no")),
)


def _steady(step: StepResult) -> bool | None:
    """True where the step reached a steady state; None where there are no figures of it."""
    steady = step.metrics.steady if step.metrics else None
    return True if steady is not None and steady.reached else None


def finite_or_null(value: Any) -> Any:
    """JSON has no Infinity/NaN (bench_serving writes a bare `Infinity`): make them null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite_or_null(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite_or_null(v) for v in value]
    return value


def step_row(step: StepResult) -> list[Any]:
    row = []
    for _name, get in COLUMNS:
        value = get(step)
        row.append("" if value is None else value)
    return row


def to_csv(run: RunRecord) -> str:
    """The run's steps as CSV; host-written text in it (errors) is sanitised."""
    return sanitize_lines(_csv(run))


def _csv(run: RunRecord) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([name for name, _ in COLUMNS])
    for step in run.steps:
        writer.writerow(
            [f"{v:.3f}" if isinstance(v, float) else v for v in step_row(step)]
        )
    return out.getvalue()


def to_json(run: RunRecord) -> str:
    data = run.model_dump(mode="json")
    data["knee"] = knee_of_steps(run.steps).sentence
    meta = run.summary.meta
    data.update(run_summary(run.steps, meta.spec, run.id, None, meta.server_info,
                            run.label).json())
    return json.dumps(finite_or_null(data), indent=2, allow_nan=False)


def _cell(value: Any) -> str:
    if value is None or value == "":
        return "\u2013"
    if isinstance(value, float):
        return f"{value:,.1f}"
    return str(value).replace("|", "\\|")


def to_markdown(run: RunRecord) -> str:
    """The run as Markdown. The server's version, URL, profile, flags and step errors came
    from the host: a crafted one must not set the title or clear the screen of whoever
    prints it, so the whole text is sanitised."""
    return sanitize_lines(_markdown(run))


def _markdown(run: RunRecord) -> str:
    summary = run.summary
    meta = summary.meta
    started = datetime.fromtimestamp(summary.started_at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    spec = meta.spec
    lines = [
        f"# Sweep run {summary.id}: {run.label}",
        "",
        f"- host: {meta.host or '-'}  server: {meta.server_url or '-'}  "
        f"sglang {meta.server_version or '?'}",
        f"- profile: {meta.profile or '-'}  engine: {meta.engine}  status: {summary.status}",
        f"- started: {started}",
        f"- workload: endpoint {spec.get('endpoint', '?')}, input {spec.get('input_len', '?')} "
        f"/ output {spec.get('output_len', '?')} tokens",
        f"- knee: {knee_of_steps(run.steps).sentence}",
    ]
    if meta.flags:
        flags = " ".join(f"--{k} {v}" for k, v in meta.flags.items())
        lines.append(f"- flags: `{flags}`")
    wanted = (
        "concurrency",
        *(("request_rate",) if is_rate_sweep(run.steps) else ()),
        "repeat",
        "status",
        "request_per_s",
        "output_tok_s",
        "total_tok_s",
        "ttft_p50_ms",
        "ttft_p99_ms",
        "itl_p50_ms",
        "tpot_p50_ms",
        "e2e_p50_ms",
        "errors",
    )
    index = [i for i, (name, _) in enumerate(COLUMNS) if name in wanted]
    lines += ["", "| " + " | ".join(COLUMNS[i][0] for i in index) + " |"]
    lines.append("|" + "|".join("---:" for _ in index) + "|")
    for step in run.steps:
        row = step_row(step)
        lines.append("| " + " | ".join(_cell(row[i]) for i in index) + " |")
    failed = [s for s in run.steps if s.error]
    if failed:
        lines += ["", "## Failed steps", ""]
        for step in failed:
            lines.append(f"- {level_words(step)}: {step.error}")
    return "\n".join(lines) + "\n"


EXPORTERS = {"csv": to_csv, "json": to_json, "md": to_markdown, "markdown": to_markdown}
