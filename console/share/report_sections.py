"""The HTML of one run (environment, levels, GPU telemetry, flags, diagnosis) and of one A/B
(verdict with intervals, the flags that differ). Everything host-written is escaped here, by
console/share/html_text.py (which also removes terminal escapes and shows control and bidi
characters)."""

from __future__ import annotations

from collections.abc import Sequence

from console.bench.verdict import setting_label
from console.diagnose.diagnose import suggestion_text
from console.diagnose.models import Cause
from console.diagnose.run_crash import run_crash
from console.share.gather import PairView, RunView
from console.share.html_text import escape
from console.share.levels import (
    environment,
    gpu_steps,
    levels,
    optional_columns,
    optional_value,
)
from console.share.report_ladder import ladder_html
from console.share.report_svg import Interval, Series, interval_chart, line_chart

Cell = str | int | float | None


def _cell(value: Cell, digits: int = 1) -> str:
    if value is None:
        return '<td class="num">\u2013</td>'
    if isinstance(value, bool):
        return f"<td>{value}</td>"
    if isinstance(value, int):
        return f'<td class="num">{value:,}</td>'
    if isinstance(value, float):
        return f'<td class="num">{value:,.{digits}f}</td>'
    return f"<td>{escape(value)}</td>"


def table(table_id: str, headers: Sequence[str], rows: Sequence[Sequence[Cell]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(_cell(c) for c in row) + "</tr>" for row in rows)
    return (f'<div class="scroll"><table id="{escape(table_id)}"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def _levels_table(number: int, view: RunView) -> str:
    found = levels(view.run)
    extra = optional_columns(found)
    rows = [(lv.concurrency, lv.repeats, lv.total_tok_s, lv.output_tok_s, lv.ttft_p50_ms,
             lv.ttft_p99_ms, lv.itl_p50_ms, lv.itl_p99_ms,
             *(optional_value(lv, attr) for _, attr, _ in extra)) for lv in found]
    return table(f"levels-{number}", ("concurrency", "repeats", "total tok/s", "output tok/s",
                                      "TTFT p50 ms", "TTFT p99 ms", "ITL p50 ms",
                                      "ITL p99 ms", *(c[0] for c in extra)), rows)


def _gpu(number: int, view: RunView) -> str:
    steps = gpu_steps(view.evidence)
    if not steps:
        return "<p>No GPU telemetry was stored with this run.</p>"
    charts = []
    for attr, title, unit, color in (("power_w", "GPU power per step (sum over GPUs)", "W", 4),
                                     ("util_pct", "GPU utilisation per step", "%", 2)):
        points = [(g.concurrency, v) for g in steps if (v := getattr(g, attr)) is not None]
        if points:
            chart_id = f"chart-gpu-{attr.split('_')[0]}-{number}"
            charts.append(f"<figure><figcaption>{escape(title)}</figcaption>"
                          + line_chart(chart_id, title, [Series(title, points, color)],
                                       x_label="concurrency (log scale)", y_label=unit)
                          + "</figure>")
    rows = [(g.index, g.concurrency, g.power_w, g.util_pct, g.gpus, g.samples) for g in steps]
    return "".join(charts) + table(f"gpu-{number}", ("step", "concurrency", "power W",
                                                      "util %", "GPUs", "samples"), rows)


def _failed(view: RunView) -> str:
    failed = [s for s in view.run.steps if s.status != "ok"]
    if not failed:
        return ""
    out = ["<h3>Failed steps</h3>"]
    for step in failed:
        out.append(f"<p>step {step.index}, concurrency {step.concurrency}: "
                   f"{escape(step.error or step.status)}</p>")
        if step.log_tail:
            out.append(f'<pre class="log">{escape(chr(10).join(step.log_tail))}</pre>')
    return "".join(out)


def run_tables(number: int, view: RunView) -> str:
    meta = view.run.summary.meta
    spec = meta.spec
    workload = (f"endpoint {spec.get('endpoint', '?')}, input {spec.get('input_len', '?')} / "
                f"output {spec.get('output_len', '?')} tokens")
    env = [*environment(view.run, view.evidence), ("status", view.run.summary.status),
           ("workload", workload)]
    flags = sorted(meta.flags.items())
    return "".join([
        "<h3>Environment</h3>", table(f"env-{number}", ("", ""), env),
        "<h3>Per concurrency level</h3>", _levels_table(number, view),
        "<h3>GPU power and utilisation</h3>", _gpu(number, view),
        "<h3>Server flags</h3>",
        table(f"flags-{number}", ("flag", "value"), [(f"--{k}", str(v)) for k, v in flags])
        if flags else "<p>No flags stored with this run.</p>",
        _failed(view),
    ])


def _cause(cause: Cause) -> str:
    items = "".join(f"<li><b>{escape(e.source)}</b>: {escape(e.text)}</li>"
                    for e in cause.evidence)
    fix = suggestion_text(cause)
    fix_html = f"<p>try: <code>{escape(fix)}</code></p>" if fix else ""
    return (f'<div class="cause" data-cause="{escape(cause.id)}"><p><b>{escape(cause.id)}</b> '
            + (f"explains {cause.confidence:.0%} of the step's throughput"
               if cause.effect_kind == "measured" else escape(cause.effect_label))
            + f": {escape(cause.title)}"
            f"</p><ul>{items}</ul>{fix_html}</div>")


def _quoted(view: RunView) -> str:
    """The startup log line the run keeps verbatim (stored evidence is otherwise parsed
    numbers, not lines), escaped; a failed step's last lines are quoted under its tables."""
    lines = []
    if view.evidence is not None and view.evidence.startup.moe_untuned_warning:
        lines.append(view.evidence.startup.moe_untuned_warning)
    if not lines:
        return ""
    text = escape("\n".join(lines))
    return f'<h4>Quoted log lines</h4><pre class="log">{text}</pre>'


def diagnosis_html(view: RunView) -> str:
    d = view.diagnosis
    crash = run_crash(view.run.steps)
    out = ["<h3>Why it plateaued</h3>"]
    if crash is not None:  # the first finding: the server died
        out.append(f'<p class="crash"><strong>crash</strong>: '
                   f"{escape(crash.sentence())}</p>")
    out.append(f"<p>knee: {escape(d.knee.sentence)}</p>")
    if view.evidence is None:
        out.append("<p>No evidence was stored with this run: only the client's numbers "
                   "were checked.</p>")
    if d.causes:
        out += [_cause(c) for c in d.causes]
    else:
        out.append("<p>No clear cause.</p>")
        if d.candidates:
            out.append("<p>Strongest small effects: " + escape(", ".join(
                f"{c.id} {c.confidence:.0%}" for c in d.candidates[:3])) + "</p>")
    if d.ladder is not None:
        out.append(ladder_html(d.ladder, f"ladder-{view.run.id}"))
    out.append(_quoted(view))
    out.append("<details><summary>What was checked</summary><ul>"
               + "".join(f"<li>{escape(c)}</li>" for c in d.checked) + "</ul></details>")
    return "".join(out)


def pair_html(number: int, pair: PairView) -> str:
    v = pair.verdict
    stored = f"stored A/B pair {pair.pair_id}" if pair.pair_id is not None else \
        "two runs compared (not a stored A/B pair)"
    out = [f'<section class="ab" id="ab-{number}"><h2>A/B: {escape(pair.b.title)} vs '
           f"{escape(pair.a.title)}</h2>",
           f"<p class=\"meta\">A = {escape(v.label_a)}, B = {escape(v.label_b)}; {stored}; "
           f"metric {escape(v.metric)}</p>",
           f'<p class="verdict">verdict: {escape(v.sentence)}</p>']
    if v.efficiency:
        out.append(f'<p class="verdict">energy: {escape(v.efficiency)}</p>')
    if v.points:
        conf = f"{v.level_confidence:.1%}" if v.level_confidence else f"{v.confidence:.0%}"
        points = [Interval(p.concurrency, p.delta_pct, p.half_width_pct, p.word)
                  for p in v.points]
        out.append("<figure><figcaption>B vs A per level, with "
                   f"{escape(conf)} intervals</figcaption>"
                   + interval_chart(f"chart-ab-{number}", "B vs A per level", points,
                                    x_label="concurrency (log scale)", y_label="B \u2212 A, %")
                   + "</figure>")
        rows = [(p.concurrency, p.n_a, p.n_b, p.mean_a, p.mean_b, p.interval, p.word)
                for p in v.points]
        out.append(table(f"verdict-{number}", ("concurrency", "repeats A", "repeats B",
                                               "A tok/s", "B tok/s", "B \u2212 A", "word"),
                         rows))
    out += [f"<p>note: {escape(n)}</p>" for n in v.notes]
    out.append("<h3>Flags and environment that differ</h3>")
    out.append(table(f"flagdiff-{number}", ("flag or env", "A", "B"),
                     [(setting_label(f), a, b) for f, a, b in pair.flags])
               if pair.flags else "<p>The two runs' stored flags and environment are the "
               "same.</p>")
    out.append("</section>")
    return "".join(out)
