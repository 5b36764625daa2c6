"""What every rule's sentences and effects are built from: where a step is (a sweep's level
or a log's lines), shares and milliseconds as text, the predicted gain, the effect item and
its kind, the fit of the same graph kind, the level a mechanism is measured at."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from console.diagnose.effects import Fit, decode_step_s, decode_wall_share, gain_pct
from console.diagnose.models import DecodePoint, Effect, EvidenceItem, StepEvidence
from console.diagnose.presence import when
from console.diagnose.registry import Context


def window_text(step: StepEvidence) -> str:
    if not step.offered_known:  # a log's band of lines: its own wall time, no offered level
        stamp = when([step])
        return f"lines {stamp}" if stamp else "lines"
    return f"step c={step.concurrency} ({when([step]) or '?'})"


def pct_text(value: float) -> str:
    return f"{value * 100:.0f}%"


def ms_text(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def eager_fraction(points: Sequence[DecodePoint]) -> float:
    known = [p for p in points if p.cuda_graph is not None]
    return sum(1 for p in known if not p.cuda_graph) / len(known) if known else 0.0


def metric_share(step: StepEvidence, name: str, test: Callable[[float], bool]) -> tuple[int, int]:
    values = [m.values[name] for m in step.metrics if name in m.values]
    return sum(1 for v in values if test(v)), len(values)


def predict(explained: float, step: StepEvidence, condition: str) -> tuple[float, str]:
    gain = gain_pct(explained)
    if not step.offered_known:
        return gain, f"+{gain:.0f}% if {condition} (derived from the effect above)"
    return gain, f"+{gain:.0f}% at c={step.concurrency} if {condition}"


def ab_level(step: StepEvidence) -> int | None:
    """The level a suggestion's A/B is run at: none for a log's band of lines."""
    return step.concurrency if step.offered_known else None


def effect_item(step: StepEvidence, explained: float, text: str, **values: Any) -> EvidenceItem:
    explained = round(explained, 3)  # as the cause's confidence holds it
    if not step.offered_known:
        said = (f"{window_text(step)}: {text}; explains ~{pct_text(explained)} of the throughput "
                "(derived: an estimate from the log's lines, #running-req / gen throughput)")
    else:
        said = (f"{window_text(step)}: {text}; explains {pct_text(explained)} of the step's "
                "throughput")
    return EvidenceItem(source="effect", text=said,
                        values={"explained": round(explained, 3), **values})


def effect_of(ctx: Context, explained: float | None, kind: str | None = None,
               ab: str = "", low: float | None = None, high: float | None = None) -> Effect:
    """`kind` None: measured on a sweep's levels, an estimate on a log's lines alone."""
    return Effect(kind=kind or ("estimate" if ctx.lines else "measured"),
                  share=None if explained is None else round(explained, 3),
                  low=low, high=high, ab=ab)


def fit_for(ctx: Context, points: Sequence[DecodePoint]) -> Fit | None:
    """Step time against batch fitted on lines (or levels) of the same kind as `points`:
    eager against eager, graph against graph, so a stacked graph ceiling does not bend the
    line another cause is measured on; all of them when one kind has no fit."""
    graph = eager_fraction(points) < 0.5
    return ctx.fit(graph) or ctx.any_fit


def best_found(found: list[tuple[float, StepEvidence, Any]]
               ) -> tuple[float, StepEvidence, Any] | None:
    """The highest concurrency where the mechanism shows (the saturated level every cause is
    measured at, so their shares compare: a fixed cost per step weighs less there than at a
    lower level, and a plateau is about the top of the curve); among its repeats, the most."""
    if not found:
        return None
    return max(found, key=lambda f: (f[1].concurrency, f[0]))


def wall_said(wall: float) -> str:
    if wall >= 1.0:
        return ""
    return (f"; decode rounds fill {pct_text(wall)} of the step's time, the rest (prefill) is "
            "unchanged (derived: the client's output tok/s / batch x step time)")


def fit_said(ctx: Context, kind: str) -> str:
    if ctx.lines:
        return (f"derived, an estimate from the log alone: step time vs batch fitted on its "
                f"{kind} Decode lines, each #running-req / gen throughput")
    return f"step time vs batch fitted on the {kind} levels"


def decode_share_of(step: StepEvidence, running: float) -> float:
    """The step's share of time in decode rounds (1 without the client's output rate)."""
    seconds = decode_step_s(step)
    return 1.0 if seconds is None else decode_wall_share(step, seconds, running)
