"""The Why view: the knee, then each ranked cause with its evidence and the change to try.

Renders a typed console.diagnose Diagnosis only (no I/O); every string from the host (log
text inside evidence) is shown as plain Text, never markup.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import Static

from console.diagnose.diagnose import suggestion_text
from console.diagnose.models import Cause, Diagnosis
from console.logs.ladder_text import why_line

MAX_CAUSES = 9  # keys 1..9 open an A/B of a cause's suggestion
# All-reduces over PCIe: beside the path fix, the layouts that all-reduce over fewer GPUs
# (console/jobs/layout.py, issue 39).
LAYOUT_CAUSE = "tp-allreduce-pcie"
LAYOUT_DUEL = ("duel the layouts on this box: `plateau layout HOST` (TPn vs DP2 x TP(n/2) vs "
               "attention DP, custom all-reduce on/off; fit, KV per replica, all-reduce share)")


def can_ab(cause: Cause) -> bool:
    """A suggestion that is a profile change (flags or env) can be measured as an A/B."""
    return bool(cause.suggest.flags or cause.suggest.env)


def why_text(diagnosis: Diagnosis | None, note: str, effective: Sequence[str] = (),
             crash: str = "") -> Text:
    """`effective`: what the server runs with other than asked (`--flag requested →
    effective`), said under the knee. `crash`: the crash or failed launch the log ends in,
    said before anything else (a plateau is beside the point when the server died)."""
    text = Text()
    if crash:
        text.append("CRASH: ", style="bold red")
        text.append(crash + "\n", style="bold")
    if note:
        text.append(note + "\n", style="dim")
    if diagnosis is None:
        return text
    text.append(f"knee: {diagnosis.knee.sentence}\n", style="bold")
    for line in effective:
        text.append("effective: ", style="dim")
        text.append(f"{line}\n")
    if diagnosis.ladder is not None and diagnosis.ladder.ceiling is not None:
        # One line at 80 columns: the decode batches against the captured ladder, `|` at its
        # largest size, `→ N` the proposed one (console/logs/ladder_text.py).
        text.append(f"{why_line(diagnosis.ladder)}\n", style="dim")
    text.append("\n")
    if not diagnosis.causes:
        return _no_clear_cause(text, diagnosis)
    for rank, cause in enumerate(diagnosis.causes[:MAX_CAUSES], 1):
        text.append(f"{rank}. {cause.id}", style="bold")
        text.append(f"  {_effect_words(cause)}  {cause.title}\n")
        if cause.presence is not None and cause.presence.text:
            text.append("     present: ", style="dim")
            text.append(f"{cause.presence.text}\n")
        gain = _predicted_gain(cause)
        if gain:
            text.append(f"     {gain}\n", style="dim")
        for evidence in cause.evidence:
            text.append(f"     {evidence.source}: ", style="dim")
            text.append(f"{evidence.text}\n")
        fix = suggestion_text(cause)
        if fix:
            text.append("     try: ", style="bold")
            text.append(fix)
            text.append(f"   [{rank}: A/B with this as B]\n" if can_ab(cause) else "\n",
                        style="dim")
        if cause.id == LAYOUT_CAUSE:
            text.append("     or: ", style="bold")
            text.append(LAYOUT_DUEL + "\n")
        text.append("\n")
    return text


def _no_clear_cause(text: Text, diagnosis: Diagnosis) -> Text:
    """No cause explains enough: the strongest small effects and the run's noise, then what
    was checked (an abstention says what it weighed, never just "nothing")."""
    text.append("No clear cause.", style="bold")
    if diagnosis.noise is not None:
        text.append(f"  (this run's noise: {diagnosis.noise:.0%} of throughput)", style="dim")
    text.append("\n")
    if diagnosis.candidates:
        text.append("Strongest candidates, each too small to name:\n")
        for cause in diagnosis.candidates[:3]:
            text.append(f"  - {cause.id} explains {cause.confidence:.0%}: {cause.title}\n")
    text.append("Checked:\n", style="bold")
    for item in diagnosis.checked:
        text.append(f"  - {item}\n")
    return text


def _effect_words(cause: Cause) -> str:
    """A measured share as before; an estimate, a bound, a prior or an unmeasured effect said
    as what it is."""
    if cause.effect_kind == "measured":
        return f"explains {cause.confidence:.0%} of the throughput"
    return cause.effect_label


def _predicted_gain(cause: Cause) -> str:
    s = cause.suggest
    where = f" at c={s.at_concurrency}" if s.at_concurrency else ""
    if s.gain_pct is None:
        if s.itl_change_pct is not None:
            return (f"predicted ITL mean change of the fix: {s.itl_change_pct:+.0f}%{where} "
                    "(latency; no throughput gain predicted)")
        return ""
    if s.gain_kind == "bound":
        return f"predicted gain of the fix: up to {s.gain_pct:+.0f}%{where} (an upper bound)"
    if s.gain_kind == "prior" and s.gain_low_pct is not None and s.gain_high_pct is not None:
        return (f"predicted gain of the fix: {s.gain_pct:+.0f}%{where} (a prior: "
                f"{s.gain_low_pct:+.0f}..{s.gain_high_pct:+.0f}%)")
    return f"predicted gain of the fix: {s.gain_pct:+.0f}%{where} (an A/B checks it)"


class WhyView(Static):
    """One scrollable text block; `show` replaces it."""

    plain: str = ""  # what is shown, as plain text (tests, copy)

    def show(self, diagnosis: Diagnosis | None, note: str,
             effective: Sequence[str] = (), crash: str = "") -> None:
        text = why_text(diagnosis, note, effective, crash)
        self.plain = text.plain
        self.update(text)
