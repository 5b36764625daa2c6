"""The boot-to-boot floor: how much two fresh boots of the same profile differ, per level.

A restart is noisy as well as slow. A server's speed is partly fixed when it starts (the
allocator's layout, autotuned kernels, the clocks the power manager settles on): "an earlier
single-boot A/B reported 'v0.5.20 regresses decode ~10%' and it was wrong" (club-3090 PR
#1347, now two fresh boots per arm, interleaved); vLLM's MoE-config PRs report "serve-level
paired A/B (12 boots)" (vLLM PR #52192). Repeats inside one boot never see this spread, so a
verdict from them alone calls a boot's luck a real difference.

`plateau ab HOST --aa --a PROFILE` measures it: interleaved passes of one profile, a fresh
boot each; per concurrency, the standard deviation of the boots' means (in % of the mean) is
the floor's unit. It is stored per host, profile and server version (console/store), and
every verdict on that host+profile+version reads it (console.bench.verdict): a delta inside
`floor_half_width` for the A/B's own number of boots per side is "within boot noise".

The half-width for nA and nB boots: t(df = boots measured - 1) x sd x sqrt(1/nA + 1/nB), at the
verdict's per-level confidence. With one boot per side (an A/B that is not interleaved) that
is the full spread of two boots; interleaving n boots per side narrows it by sqrt(n).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Sequence

from console.bench.models import Frozen, StepResult
from console.bench.tdist import t_quantile

MIN_BOOTS = 3  # fewer boots give no spread worth storing


class LevelFloor(Frozen):
    concurrency: int
    boots: int
    mean: float  # the boots' mean headline total tok/s
    sd_pct: float  # sd of the boots' means, % of `mean`


class BootFloor(Frozen):
    host: str
    profile: str
    version: str
    metric: str = "total tok/s"
    levels: list[LevelFloor] = []
    measured_at: float = 0.0
    run_a: int | None = None  # the A/A's two stored runs
    run_b: int | None = None

    def at(self, concurrency: int) -> LevelFloor | None:
        return next((lv for lv in self.levels if lv.concurrency == concurrency), None)

    def summary(self) -> str:
        """"boots differ by ±4.2% at 1, ±2.0% at 16 (6 boots)" (two single boots, 95%)."""
        if not self.levels:
            return "no level had enough boots"
        parts = [f"\u00b1{floor_half_width(lv, 1, 1):.1f}% at {lv.concurrency}"
                 for lv in self.levels]
        boots = max(lv.boots for lv in self.levels)
        return f"two boots differ by {', '.join(parts)} ({boots} boots measured)"


def _t(confidence: float, df: int) -> float:
    return t_quantile(0.5 + confidence / 2.0, max(1, df))


def floor_half_width(level: LevelFloor, boots_a: int, boots_b: int,
                     confidence: float = 0.95) -> float:
    """How far apart (in %) the means of `boots_a` and `boots_b` fresh boots of one profile
    fall at this level, at `confidence`."""
    spread = math.sqrt(1.0 / max(1, boots_a) + 1.0 / max(1, boots_b))
    return _t(confidence, level.boots - 1) * level.sd_pct * spread


def boots_of(steps: Sequence[StepResult], interleaved: bool) -> dict[int, dict[int, list[float]]]:
    """Per concurrency, per boot, the ok steps' headline total tok/s. Interleaved, each
    repeat ran on a boot of its own (console.bench.abplan); otherwise one boot held them all."""
    out: dict[int, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for step in steps:
        m = step.metrics
        if step.status != "ok" or m is None:
            continue
        value = m.headline_total_tok_s()
        if math.isfinite(value) and value > 0:
            out[step.concurrency][step.repeat if interleaved else 0].append(value)
    return out


def boot_count(steps: Sequence[StepResult], interleaved: bool | None) -> int:
    """How many boots a side's steps came from (unknown interleaving: one)."""
    if not interleaved:
        return 1 if steps else 0
    return len({s.repeat for s in steps})


def measure_floor(steps_a: Sequence[StepResult], steps_b: Sequence[StepResult], *,
                  host: str, profile: str, version: str, measured_at: float,
                  run_a: int | None = None, run_b: int | None = None) -> BootFloor:
    """The floor from an interleaved A/A: both sides' boots pooled (one profile)."""
    levels: list[LevelFloor] = []
    a, b = boots_of(steps_a, True), boots_of(steps_b, True)
    for concurrency in sorted(set(a) | set(b)):
        means = [statistics.fmean(v) for v in a.get(concurrency, {}).values()]
        means += [statistics.fmean(v) for v in b.get(concurrency, {}).values()]
        if len(means) < MIN_BOOTS:
            continue
        mean = statistics.fmean(means)
        levels.append(LevelFloor(concurrency=concurrency, boots=len(means), mean=mean,
                                 sd_pct=statistics.stdev(means) / mean * 100.0))
    return BootFloor(host=host, profile=profile, version=version, levels=levels,
                     measured_at=measured_at, run_a=run_a, run_b=run_b)
