"""Is B really different from A? Per concurrency: the delta, a confidence interval from the
repeats, and one word (better / worse / within noise); one sentence at the knee.

Pure functions of stored steps, so `plateau compare` says exactly what the A/B said.

Why Welch's t and not a bootstrap: an A/B has few repeats per side (3 by default). A bootstrap
of 3 values has 10 distinct resamples and its percentile interval is known to be too narrow at
such sizes (it under-covers: it claims "real" too often). Welch's t interval takes the small
sample into account through the t distribution with the Welch-Satterthwaite degrees of freedom,
and does not assume A and B are equally noisy (a flag can make a server less stable). The
interval is for the difference of means, expressed in % of A's mean (A's own uncertainty in the
denominator is second order at the noise levels that matter here, 1-3 %).

Corrected for the number of levels (Bonferroni): an A/B judges every concurrency, and six 95%
tests in a row say "real" somewhere by chance about one time in four. Each level's interval is
therefore at 1 - 0.05/m for m levels, so that all m hold together at 95% and an identical
B reads "within noise" at every level 95% of the time. Bonferroni rather than Holm: Holm
rejects a little more often but gives no per-level interval to print, and the verdict shows
one; it holds whatever the dependence between levels (they share server lifetimes). The knee
sentence is one test (the pooled delta at the knee) and stays at 95%.

Throughput is each step's steady-state total tok/s (console.bench.steady) where the step had a
steady state, else its whole-step figure (older runs, bench_serving steps); a step that never
reached steady state is counted and said.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Literal

from console.bench.bootfloor import BootFloor, boot_count, floor_half_width
from console.bench.energy import energy_change_pct
from console.bench.knee import find_knee
from console.bench.models import Frozen, StepResult
from console.bench.tdist import t_cdf, t_quantile, welch

__all__ = ["t_cdf", "t_quantile", "welch"]  # where they lived first; tests import them here

CONFIDENCE = 0.95
Word = Literal["better", "worse", "within noise", "within boot noise", "no repeats"]
KneeWord = Literal["real", "within noise", "within boot noise", "noise unknown"]


class PointVerdict(Frozen):
    concurrency: int
    n_a: int
    n_b: int
    mean_a: float
    mean_b: float
    delta_pct: float  # (B - A) / A, in %
    half_width_pct: float | None  # the confidence interval is delta_pct +- this
    df: float | None
    word: Word
    no_steady_state: int = 0  # steps at this concurrency that never reached steady state
    # How far apart this A/B's boots fall by boot-to-boot noise alone (console.bench.bootfloor,
    # for its boots per side): a delta inside it is "within boot noise". None: not known.
    floor_pct: float | None = None

    @property
    def interval(self) -> str:
        if self.half_width_pct is None:
            return f"{_signed(self.delta_pct)}%"
        return f"{_signed(self.delta_pct)}% \u00b1 {self.half_width_pct:.1f}%"


class Verdict(Frozen):
    label_a: str
    label_b: str
    metric: str = "total tok/s"
    confidence: float = CONFIDENCE
    points: list[PointVerdict] = []
    knee_range: list[int] = []  # the concurrencies the sentence is about
    knee_delta_pct: float | None = None
    knee_half_width_pct: float | None = None
    knee_word: KneeWord = "noise unknown"
    sentence: str = ""
    # "B: +31% throughput, -18% J/token" when both sides sampled GPU power (bench/energy.py).
    efficiency: str = ""
    notes: list[str] = []
    level_confidence: float | None = None  # per-level intervals (Bonferroni over the levels)
    # The boot-to-boot floor at the knee (console.bench.bootfloor) for `boots_a` / `boots_b`
    # fresh boots per side; None when no A/A of this host+profile+version measured it.
    knee_floor_pct: float | None = None
    boots_a: int = 0
    boots_b: int = 0

    def point(self, concurrency: int) -> PointVerdict | None:
        return next((p for p in self.points if p.concurrency == concurrency), None)


# ---------------------------------------------------------------------------------- judging


def _signed(value: float) -> str:
    return f"{value:+.1f}".replace("-", "\u2212")


ValueOf = Callable[[StepResult], float | None]


def _values(steps: Sequence[StepResult], metric: str = "total tok/s",
            value_of: ValueOf | None = None,
            ) -> dict[int, tuple[list[float], int]]:
    """Per concurrency: the headline `metric` (total or output tok/s, or `value_of` the step
    where given) of every ok step, and how many lacked a steady state. A step `value_of` has
    no value for (None: no SLO, no power sampled) is left out; its 0 is kept (a repeat where
    no request met the SLO counts against its side, it is not a failed step)."""
    grouped: dict[int, list[float]] = defaultdict(list)
    flagged: dict[int, int] = defaultdict(int)
    for step in steps:
        m = step.metrics
        if step.status != "ok" or m is None:
            continue
        if value_of is not None:
            got = value_of(step)
            if got is None or not math.isfinite(got) or got < 0:
                continue
            value = got
        else:
            value = m.headline_output_tok_s() if metric == "output tok/s" else \
                m.headline_total_tok_s()
        if math.isfinite(value) and (value > 0 or value_of is not None):
            grouped[step.concurrency].append(value)
            flagged[step.concurrency] += int(m.no_steady_state)
    return {c: (v, flagged[c]) for c, v in grouped.items()}


def judge_point(
    concurrency: int, a: list[float], b: list[float], *, confidence: float = CONFIDENCE,
    no_steady_state: int = 0, floor_pct: float | None = None,
) -> PointVerdict:
    mean_a, mean_b = statistics.fmean(a), statistics.fmean(b)
    delta_pct = (mean_b - mean_a) / mean_a * 100.0
    test = welch(a, b)
    if test is None:
        return PointVerdict(
            concurrency=concurrency, n_a=len(a), n_b=len(b), mean_a=mean_a, mean_b=mean_b,
            delta_pct=delta_pct, half_width_pct=None, df=None,
            word="within boot noise" if floor_pct is not None and abs(delta_pct) <= floor_pct
            else "no repeats",
            no_steady_state=no_steady_state, floor_pct=floor_pct,
        )
    _, se, df = test
    half = t_quantile(0.5 + confidence / 2.0, df) * se / mean_a * 100.0
    if abs(delta_pct) <= half:
        word: Word = "within noise"
    elif floor_pct is not None and abs(delta_pct) <= floor_pct:
        word = "within boot noise"
    else:
        word = "better" if delta_pct > 0 else "worse"
    return PointVerdict(
        concurrency=concurrency, n_a=len(a), n_b=len(b), mean_a=mean_a, mean_b=mean_b,
        delta_pct=delta_pct, half_width_pct=half, df=df, word=word,
        no_steady_state=no_steady_state, floor_pct=floor_pct,
    )


def _knee_range(a: dict[int, tuple[list[float], int]], common: list[int]) -> list[int]:
    """The concurrencies to sum up in one sentence: A's knee and the step after it (where
    throughput has stopped scaling, the part of the curve a flag change is for); the top two
    when A is still scaling; the one level when there is only one."""
    if len(common) < 2:
        return common
    knee = find_knee((c, statistics.fmean(a[c][0])) for c in common)
    if knee.kind in ("saturates", "declines") and knee.concurrency is not None:
        return [c for c in common if c in (knee.concurrency, knee.next_concurrency)]
    return common[-2:]


def _pooled(
    points: list[PointVerdict], a: dict[int, tuple[list[float], int]],
    b: dict[int, tuple[list[float], int]], confidence: float,
) -> tuple[float, float | None]:
    """Mean of the points' % deltas and its interval half-width (Welch-Satterthwaite df over
    every group's variance contribution)."""
    k = len(points)
    delta = sum(p.delta_pct for p in points) / k
    parts: list[tuple[float, int]] = []  # (variance contribution in %^2, df of that group)
    for p in points:
        va, vb = a[p.concurrency][0], b[p.concurrency][0]
        if len(va) < 2 or len(vb) < 2:
            return delta, None
        scale = (100.0 / p.mean_a / k) ** 2
        parts.append((statistics.variance(va) / len(va) * scale, len(va) - 1))
        parts.append((statistics.variance(vb) / len(vb) * scale, len(vb) - 1))
    total = sum(v for v, _ in parts)
    if total <= 0:
        return delta, 0.0
    df = total * total / sum(v * v / d for v, d in parts if v > 0)
    return delta, t_quantile(0.5 + confidence / 2.0, df) * math.sqrt(total)


def _range_text(levels: list[int]) -> str:
    if not levels:
        return "-"
    return str(levels[0]) if len(levels) == 1 else f"{levels[0]}\u2013{levels[-1]}"


def judge(
    steps_a: Sequence[StepResult],
    steps_b: Sequence[StepResult],
    *,
    label_a: str = "A",
    label_b: str = "B",
    confidence: float = CONFIDENCE,
    interleaved: bool | None = None,
    metric: str = "total tok/s",
    value_of: ValueOf | None = None,
    floor: BootFloor | None = None,
) -> Verdict:
    """The verdict on B against A. `interleaved` False adds a note that each side ran in one
    server lifetime (a launch-to-launch difference then looks like a real one). `floor`: the
    boot-to-boot floor of A's host+profile+version (console.bench.bootfloor); a delta inside
    it, for this A/B's boots per side (each interleaved repeat is a boot; otherwise one per
    side), is "within boot noise"; without one the verdict says the floor is unknown. `metric`:
    "total tok/s" (the default) or "output tok/s", named so; `value_of` computes it from a step
    where given (a tune's objective, console.jobs.tune_objective). A level where A's mean is
    0 (no request met the SLO) has no % change and is left out, with a note."""
    a, b = _values(steps_a, metric, value_of), _values(steps_b, metric, value_of)
    notes: list[str] = []
    nothing = sorted(c for c in set(a) & set(b) if statistics.fmean(a[c][0]) <= 0)
    if nothing:
        b_says = ", ".join(f"{c}: B {statistics.fmean(b[c][0]):,.2f}" for c in nothing)
        notes.append(f"A's {metric} is 0 at {','.join(map(str, nothing))} ({b_says}): no % "
                     "change to judge there")
    common = sorted(c for c in set(a) & set(b) if c not in nothing)
    per_level = 1.0 - (1.0 - confidence) / max(1, len(common))
    boots = (boot_count(steps_a, interleaved), boot_count(steps_b, interleaved))
    floors = _floors(floor, common, boots, per_level, value_of is None)
    points = [
        judge_point(c, a[c][0], b[c][0], confidence=per_level,
                    no_steady_state=a[c][1] + b[c][1], floor_pct=floors.get(c))
        for c in common
    ]
    if len(common) > 1:
        notes.append(f"per-level intervals at {per_level:.1%} (Bonferroni over {len(common)} "
                     f"levels): together they hold at {confidence:.0%}")
    if not points:
        return Verdict(label_a=label_a, label_b=label_b, metric=metric, confidence=confidence,
                       sentence=notes[0] if nothing else
                       "no concurrency was measured in both runs", notes=notes)
    flagged = sum(p.no_steady_state for p in points)
    if flagged:
        notes.append(
            f"{flagged} step(s) never reached steady state (in-flight < ratio x concurrency):"
            " their whole-step throughput is used; raise the prompts per step"
        )
    if interleaved is False and any(p.n_a > 1 for p in points):
        notes.append(
            "A's and B's repeats each ran in one server lifetime: a launch-to-launch "
            "difference looks like a real one; interleave to rule it out"
        )
    notes.extend(_floor_notes(floor, floors, common, boots, value_of is None))
    levels = _knee_range(a, common)
    chosen = [p for p in points if p.concurrency in levels]
    delta, half = _pooled(chosen, a, b, confidence)
    where = _range_text(levels)
    knee_floor = _knee_floor(chosen)
    boots_said = "" if knee_floor is None else f", boots differ by \u00b1{knee_floor:.1f}%"
    if half is None and (knee_floor is None or abs(delta) > knee_floor):
        knee_word: KneeWord = "noise unknown"
        sentence = (
            f"B {_signed(delta)}% at {where}{boots_said}: noise unknown "
            f"(needs 2+ repeats per side; repeats = {min(p.n_a for p in chosen)})"
        )
    elif half is None or abs(delta) <= (half if knee_floor is None else max(half, knee_floor)):
        knee_word = "within noise" if half is not None and abs(delta) <= half \
            else "within boot noise"
        interval = "" if half is None else f" \u00b1 {half:.1f}%"
        sentence = f"B {_signed(delta)}%{interval} at {where}{boots_said}: {knee_word}"
    else:
        knee_word = "real"
        sentence = f"B {_signed(delta)}% \u00b1 {half:.1f}% at {where}{boots_said}: real"
    joules = energy_change_pct(steps_a, steps_b, levels)
    efficiency = "" if joules is None else (
        f"B: {_signed(delta)}% {'throughput' if value_of is None else metric}, "
        f"{_signed(joules)}% J/token at {where}")
    return Verdict(
        label_a=label_a, label_b=label_b, metric=metric, confidence=confidence, points=points,
        level_confidence=per_level, knee_range=levels, knee_delta_pct=delta,
        knee_half_width_pct=half,
        knee_word=knee_word, sentence=sentence, efficiency=efficiency, notes=notes,
        knee_floor_pct=knee_floor, boots_a=boots[0], boots_b=boots[1],
    )


def _floors(floor: BootFloor | None, common: Sequence[int], boots: tuple[int, int],
            confidence: float, headline: bool) -> dict[int, float]:
    """Per level, the boot floor's half-width for this A/B's boots (the floor is measured on
    the headline throughput: a tune's objective has none)."""
    if floor is None or not headline:
        return {}
    out: dict[int, float] = {}
    for c in common:
        level = floor.at(c)
        if level is not None:
            out[c] = floor_half_width(level, boots[0], boots[1], confidence)
    return out


def _floor_notes(floor: BootFloor | None, floors: dict[int, float], common: Sequence[int],
                 boots: tuple[int, int], headline: bool) -> list[str]:
    if not headline:
        return []
    said = f"{boots[0]} boot(s) of A, {boots[1]} of B"
    if floor is None:
        return [f"boot-to-boot floor unknown ({said}): no A/A of this profile and version on "
                "this host; `plateau ab HOST --aa --a PROFILE` measures how much fresh boots "
                "differ"]
    missing = [c for c in common if c not in floors]
    note = (f"boot-to-boot floor from the A/A of {floor.profile} {floor.version} on "
            f"{floor.host} ({said})")
    if missing:
        note += f"; not measured at {','.join(map(str, missing))}"
    return [note]


def _knee_floor(chosen: Sequence[PointVerdict]) -> float | None:
    """The floor at the knee: the chosen levels' mean (a boot that is fast is fast at every
    level, so their boot noise does not average out the way independent noise would)."""
    floors = [p.floor_pct for p in chosen]
    if not floors or any(f is None for f in floors):
        return None
    return statistics.fmean(f for f in floors if f is not None)


def differing_flags(
    flags_a: Mapping[str, object], flags_b: Mapping[str, object]
) -> list[tuple[str, str, str]]:
    """(flag, A's value, B's value) for every flag the two runs do not share ('-' = unset)."""
    out = []
    for name in sorted(set(flags_a) | set(flags_b)):
        va, vb = flags_a.get(name, "-"), flags_b.get(name, "-")
        if va != vb:
            out.append((name, str(va), str(vb)))
    return out


ENV_ROW = "env "  # how a differing environment variable's row is named among the flags'


def differing_settings(
    flags_a: Mapping[str, object], flags_b: Mapping[str, object],
    env_a: Mapping[str, object] | None, env_b: Mapping[str, object] | None,
) -> list[tuple[str, str, str]]:
    """differing_flags, then every environment variable the two profiles set differently as
    a row named `env NAME` ('-' = unset): unsetting NCCL_P2P_DISABLE changes a run as much as
    a flag does. An env of None is unknown (no evidence stored): no env rows then."""
    rows = differing_flags(flags_a, flags_b)
    if env_a is not None and env_b is not None:
        rows += [(ENV_ROW + name, va, vb) for name, va, vb in differing_flags(env_a, env_b)]
    return rows


def setting_label(name: str) -> str:
    """A row of differing_settings as the operator writes it: `--flag` or `env NAME`."""
    return name if name.startswith(ENV_ROW) else f"--{name}"
