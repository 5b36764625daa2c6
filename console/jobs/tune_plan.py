"""What the tuner tries next, from a diagnosis: pure, so the search is explainable and testable.

- Actionable causes are those whose suggestion changes the profile (flags or environment);
  a host setting (power limit, cooling) or a sweep setting (workers, prompts) is noted and
  left to the operator.
- The top actionable cause gives the candidates, in order: its suggestion as the evidence
  implies it; where that names a number, a larger one (tried when the implied one is not
  kept: it crashed, did not help, or did not fit); and, when another cause of the same
  diagnosis interacts with it (INTERACTS), the pair together.
- A change already judged from the same good profile is not tried again.
- A layout step: when `tp-allreduce-pcie` leads with P2P and the custom all-reduce already
  on (console/diagnose/rules.py `_paths`), its suggestion is a layout, DP2 x TP(n/2): two
  replicas behind SGLang's DP controller, each all-reducing over half the GPUs; its larger
  value is DP4 x TP(n/4), where two PCIe ranks run the one-shot custom all-reduce. `plateau
  layout` duels every layout (attention DP too) when the operator wants the whole picture.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from console.config_models import ServerProfile
from console.diagnose.models import Cause, Diagnosis
from console.jobs.tune_models import Candidate, Change

# Cause pairs whose fixes pull on the same resource, so one can hide or undo the other.
# Sources: CUDA graphs for larger batches take GPU memory from the KV pool (SGLang
# model_runner.py reserves graph memory before sizing the pool; sglang#33483); a higher running
# cap needs KV room for the extra requests (scheduler's max_running_requests is cut to the
# pool, "max_running_requests was reduced"); a bigger pool and a higher cap both admit more
# requests into one decode batch, which the graph ceiling then runs eagerly.
INTERACTS: dict[frozenset[str], str] = {
    frozenset({"cuda-graph-ceiling", "kv-cache-full"}):
        "larger CUDA graphs take memory from the KV pool",
    frozenset({"running-cap", "kv-cache-full"}):
        "a higher running cap needs KV room for the extra requests",
    frozenset({"cuda-graph-ceiling", "running-cap"}):
        "a higher running cap makes batches the graph ceiling then runs eagerly",
    frozenset({"eager-decode", "kv-cache-full"}):
        "CUDA graphs take memory from the KV pool",
}
MEM_FRACTION_MAX = 0.95


def actionable(cause: Cause) -> bool:
    return bool(cause.suggest.flags or cause.suggest.env)


def not_actionable_note(cause: Cause) -> str:
    s = cause.suggest
    what = s.host or ", ".join(f"sweep {k}={v}" for k, v in s.sweep.items()) or "no change"
    return f"{cause.id} ({cause.confidence:.0%}): {what}: not a profile change, left to you"


def _larger(name: str, value: Any, current: Any) -> Any | None:
    """A value one step further than the implied one, in the direction it moves; None when
    the flag is not a number or cannot go further."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    now = current if isinstance(current, int | float) and not isinstance(current, bool) else None
    if name == "mem-fraction-static":
        base = float(now) if now is not None else float(value) - 0.05
        bigger = round(min(MEM_FRACTION_MAX, float(value) + (float(value) - base)), 3)
        return bigger if bigger > value else None
    if isinstance(value, int):
        if now is not None and value < now:  # a smaller chunk: smaller again
            return max(1, value // 2) if value > 1 else None
        return value * 2
    return None


def larger_change(change: Change, profile: ServerProfile) -> Change | None:
    flags: dict[str, Any] = {}
    moved = False
    for name, value in change.flags.items():
        bigger = _larger(name, value, profile.flags.get(name))
        moved = moved or bigger is not None
        flags[name] = bigger if bigger is not None else value
    return Change(flags=flags, env=dict(change.env)) if moved else None


def _change(cause: Cause) -> Change:
    return Change(flags=dict(cause.suggest.flags), env=dict(cause.suggest.env))


def layout_text(change: Change) -> str:
    """`DP2 x TP4` when the change sets a layout (replicas and TP size), else ""."""
    tp, dp = change.flags.get("tp-size"), change.flags.get("dp-size")
    if isinstance(tp, int) and isinstance(dp, int) and not isinstance(dp, bool):
        return f"DP{dp} x TP{tp} (replicas behind SGLang's DP controller)"
    return ""


def levels_for(cause: Cause, all_levels: Iterable[int]) -> list[int]:
    """Where the A/B measures: the level the cause acts at (its evidence's saturated step),
    else the top level of the workload."""
    levels = sorted(all_levels)
    at = cause.suggest.at_concurrency
    return [at] if at in levels else levels[-1:]


def interactions(top: Cause, others: Iterable[Cause]) -> list[tuple[Cause, str]]:
    return [(c, why) for c in others if c.id != top.id and actionable(c)
            and (why := INTERACTS.get(frozenset({top.id, c.id}))) is not None]


def candidates(diagnosis: Diagnosis, profile: ServerProfile, levels: Iterable[int],
               tried: Iterable[str] = ()) -> list[Candidate]:
    """The untried candidates of the highest-ranked actionable cause that has any left, in
    the order to try them (a cause whose every candidate was judged gives way to the next)."""
    done = set(tried)
    causes = [c for c in diagnosis.causes if actionable(c)]
    all_levels = list(levels)
    for top in causes:
        left = [c for c in _of_cause(top, causes, profile, all_levels)
                if c.change.key() not in done]
        if left:
            return left
    return []


def _of_cause(top: Cause, causes: list[Cause], profile: ServerProfile,
              levels: list[int]) -> list[Candidate]:
    at_levels = levels_for(top, levels)
    pairs = interactions(top, causes)
    notes = [f"interacts with {c.id}: {why}" for c, why in pairs]

    def make(change: Change, why: str) -> Candidate:
        return Candidate(cause=top.id, confidence=top.confidence, change=change, why=why,
                         gain_pct=top.suggest.gain_pct, at_concurrency=top.suggest.at_concurrency,
                         levels=at_levels, interacts=notes)

    implied = _change(top)
    layout = layout_text(implied)
    out = [make(implied, f"a layout change: {layout}" if layout else
                "the value the evidence implies" if implied.flags else "the fix")]
    bigger = larger_change(implied, profile)
    if bigger is not None:
        further = layout_text(bigger)
        out.append(make(bigger, f"a further layout: {further} (the first was not kept)"
                        if further else "a larger value (the implied one was not kept)"))
    for other, why in pairs:
        out.append(make(implied.merged(_change(other)),
                        f"with {other.id}'s fix together ({why})"))
    return out
