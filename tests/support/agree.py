"""Whether an A/B agrees with a suggestion's prediction (issue 37's bar)."""

from __future__ import annotations

from console.diagnose.models import Suggestion


def agrees(s: Suggestion, measured: float) -> bool:
    """The predicted sign, and within 10 points or inside the stated range (a prior's, a
    prediction's interval); a bound is never exceeded."""
    assert s.gain_pct is not None
    if (measured > 0) != (s.gain_pct > 0):
        return False
    if s.gain_kind == "bound":
        return s.gain_high_pct is not None and measured <= s.gain_high_pct
    if abs(measured - s.gain_pct) <= 10.0:
        return True
    # A prior's stated range, or a prediction's interval.
    return (s.gain_low_pct is not None and s.gain_high_pct is not None
            and s.gain_low_pct <= measured <= s.gain_high_pct)
