"""The report as one self-contained HTML page: inline CSS and SVG, no script, no request.

    page = report_html(gather(store, [12, 13]))

Host-written text (labels, versions, flags, log lines, evidence sentences) is escaped with
`html.escape` at the one place it becomes markup; a Content-Security-Policy that allows no
script at all is a second fence should an escape ever be missed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from console import __version__
from console.share.gather import PairView, Report, RunView
from console.share.html_text import escape
from console.share.levels import levels
from console.share.report_sections import diagnosis_html, pair_html, run_tables
from console.share.report_style import CSS
from console.share.report_svg import Series, line_chart

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def _figure(caption: str, body: str) -> str:
    return f"<figure><figcaption>{escape(caption)}</figcaption>{body}</figure>"


def _series(runs: Sequence[RunView], fields: Sequence[tuple[str, str, bool]]) -> list[Series]:
    """Per run, one series per (attribute of Level, name, dashed)."""
    out = []
    for color, view in enumerate(runs):
        rows = levels(view.run)
        for attr, name, dashed in fields:
            points = [(lv.concurrency, v) for lv in rows  # a NaN or inf has no place
                      if (v := getattr(lv, attr)) is not None and math.isfinite(v)]
            if points:
                out.append(Series(f"{view.title} \u2013 {name}", points, color, dashed))
    return out


def overview_charts(runs: Sequence[RunView]) -> str:
    charts = [
        ("chart-throughput", "Throughput vs concurrency", "tok/s",
         (("total_tok_s", "total tok/s", False), ("output_tok_s", "output tok/s", True))),
        ("chart-ttft", "Time to first token vs concurrency", "ms",
         (("ttft_p50_ms", "TTFT p50", False), ("ttft_p99_ms", "TTFT p99", True))),
        ("chart-itl", "Inter-token latency vs concurrency", "ms",
         (("itl_p50_ms", "ITL p50", False), ("itl_p99_ms", "ITL p99", True))),
    ]
    out = []
    for chart_id, title, unit, fields in charts:
        series = _series(runs, fields)
        if series:
            out.append(_figure(title, line_chart(chart_id, title, series,
                                                 x_label="concurrency (log scale)",
                                                 y_label=unit)))
    return "".join(out)


def _run_section(number: int, view: RunView) -> str:
    return (f'<section class="run" id="run-{view.run.id}" data-run="{view.run.id}">'
            f"<h2>{escape(view.title)}</h2>{run_tables(number, view)}"
            f"{diagnosis_html(view)}</section>")


def _pairs(pairs: Iterable[PairView]) -> str:
    return "".join(pair_html(n, pair) for n, pair in enumerate(pairs))


def report_html(report: Report) -> str:
    when = datetime.fromtimestamp(report.generated_at, UTC).strftime("%Y-%m-%d %H:%M UTC")
    title = "Plateau report: " + ", ".join(v.title for v in report.runs)
    body = [
        f"<h1>{escape(title)}</h1>",
        f'<p class="meta">generated {escape(when)} by plateau {escape(__version__)} from the '
        f"run history; every number below is as stored with the run.</p>",
        _pairs(report.pairs),
        "<h2>Throughput and latency</h2>" if report.runs else "",
        overview_charts(report.runs),
        *(_run_section(n, v) for n, v in enumerate(report.runs)),
    ]
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>"
        + "".join(body) + "</body></html>\n"
    )
