"""A GitHub-ready summary of a report: the level table, the causes, the A/B verdict and the
flags that differ, within one issue comment (GitHub refuses a comment over 65,536 chars).

Host-written text is made inert for Markdown: terminal escapes removed (whoever `cat`s the
file), `<`, `>` and `&` as entities (GitHub renders inline HTML), and a backslash before each
character that starts or closes a link, an image, code or emphasis (`[ ] ( ) !` ...), `|` (a
table cell), `:` and `@` (a bare URL or address would be linked: an escaped one is a separate
text node that neither GitHub nor markdown-it links) and the dot of `www.`. CommonMark
renders an escaped punctuation character as itself, so the text reads as the host wrote it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from console.bench.verdict import setting_label
from console.diagnose.diagnose import suggestion_text
from console.diagnose.run_crash import run_crash
from console.share.gather import PairView, Report, RunView
from console.share.levels import environment, levels, optional_columns, optional_value
from console.text import sanitize

LIMIT = 60_000  # under GitHub's 65,536, with room for what the operator adds


_ACTIVE = re.compile(r"([\\`*_~\[\]()!|:@])")
_WWW = re.compile(r"(www)\.", re.IGNORECASE)


def inert(text: object) -> str:
    s = sanitize(str(text)).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    s = _WWW.sub(r"\1\\.", _ACTIVE.sub(r"\\\1", s))
    return s.replace("\n", " ")


def _num(value: float | None, digits: int = 1) -> str:
    return "\u2013" if value is None else f"{value:,.{digits}f}"


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|",
            *("| " + " | ".join(row) + " |" for row in rows)]


def _run(view: RunView) -> list[str]:
    env = dict(environment(view.run, view.evidence))
    facts = ", ".join(f"{k} {inert(env[k])}" for k in ("SGLang version", "GPUs", "topology")
                      if k in env)
    crash = run_crash(view.run.steps)
    lines = [f"### {inert(view.title)}", "", f"{facts}", "",
             *([f"**crash**: {inert(crash.sentence())}", ""] if crash is not None else []),
             f"knee: {inert(view.diagnosis.knee.sentence)}", ""]
    rows = levels(view.run)
    extra = optional_columns(rows)
    lines += _table(("concurrency", "total tok/s", "output tok/s", "TTFT p50 ms",
                     "TTFT p99 ms", "ITL p50 ms", "ITL p99 ms", *(c[0] for c in extra)),
                    [(str(lv.concurrency), _num(lv.total_tok_s), _num(lv.output_tok_s),
                      _num(lv.ttft_p50_ms), _num(lv.ttft_p99_ms), _num(lv.itl_p50_ms, 2),
                      _num(lv.itl_p99_ms, 2),
                      *(_num(optional_value(lv, attr), digits) for _, attr, digits in extra))
                     for lv in rows])
    lines.append("")
    causes = view.diagnosis.causes
    if not causes:
        lines.append("why: no clear cause" + ("" if view.evidence is not None
                                              else " (no evidence stored: client only)"))
    for rank, cause in enumerate(causes[:3], 1):
        share = (f"{cause.confidence:.0%}" if cause.effect_kind == "measured"
                 else cause.effect_label)
        lines.append(f"{rank}. **{inert(cause.id)}** ({share}): "
                     f"{inert(cause.title)}")
        lines += [f"   - {inert(e.source)}: {inert(e.text)}" for e in cause.evidence[:3]]
        fix = suggestion_text(cause)
        if fix:
            lines.append(f"   - try: {inert(fix)}")
    return [*lines, ""]


def _pair(pair: PairView) -> list[str]:
    v = pair.verdict
    lines = [f"### A/B: B = {inert(v.label_b)} vs A = {inert(v.label_a)}", "",
             f"**verdict: {inert(v.sentence)}**", ""]
    if v.efficiency:
        lines[-1:-1] = [f"energy: {inert(v.efficiency)}"]
    lines += _table(("concurrency", "A tok/s", "B tok/s", "B \u2212 A", "word"),
                    [(str(p.concurrency), _num(p.mean_a), _num(p.mean_b), inert(p.interval),
                      p.word) for p in v.points])
    lines += ["", *(f"note: {inert(n)}" for n in v.notes), ""]
    if pair.flags:
        lines += _table(("flag or env", "A", "B"),
                        [(inert(setting_label(f)), inert(a), inert(b)) for f, a, b in pair.flags])
    else:
        lines.append("flags and environment: the same")
    return [*lines, ""]


def report_md(report: Report) -> str:
    lines = ["## Plateau report: " + ", ".join(inert(v.title) for v in report.runs), ""]
    for pair in report.pairs:
        lines += _pair(pair)
    for view in report.runs:
        lines += _run(view)
    text = "\n".join(lines).rstrip() + "\n"
    if len(text) > LIMIT:
        cut = text.rfind("\n", 0, LIMIT - 200)
        if cut <= 0:  # one line longer than the cap: cut inside it
            cut = LIMIT - 200
        text = text[:cut] + "\n\n(cut to fit one issue comment: `plateau report --html` has " \
            "the rest)\n"
    return text
