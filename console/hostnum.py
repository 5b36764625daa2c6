"""Numbers written by a host (log lines, /metrics, GPU samples, server replies): untrusted.

A host may print `nan`, `inf`, `1e400`, a negative count or an integer too large for a float.
Such a value is kept and shown as written ("nan", "inf"), but it never reaches a widget's
arithmetic (bars, sparklines, axes, averages): only `drawable` values are drawn.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

MAX_DRAWABLE = 1e15
"""Larger than any real rate, count or byte rate a console draws; beyond it a value is absurd
(and scaling an axis to it would flatten every real point)."""


def as_float(value: float | int) -> float:
    """`value` as a float; an int too large for one is infinity, never OverflowError."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def drawable(value: float | int | None) -> float | None:
    """`value` as a float when it can be drawn: finite, not negative, not absurd."""
    if value is None or isinstance(value, bool):
        return None
    number = as_float(value)
    if not math.isfinite(number) or number < 0 or number > MAX_DRAWABLE:
        return None
    return number


def drawable_series(values: Iterable[float | int | None]) -> list[float]:
    """The drawable values of `values`, in order (the others left out)."""
    return [v for v in map(drawable, values) if v is not None]


def format_number(value: float | int | None, spec: str) -> str:
    """`value` formatted with `spec`; "n/a" for None; non-finite values as written ("nan",
    "inf", "-inf"), whatever the spec (an int spec such as `d` would raise on them)."""
    if value is None:
        return "n/a"
    number = as_float(value)
    if not math.isfinite(number):
        return "nan" if math.isnan(number) else ("inf" if number > 0 else "-inf")
    if abs(number) > MAX_DRAWABLE:
        return f"{number:.3g}"
    return format(value, spec)
