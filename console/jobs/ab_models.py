"""The A/B job's request, progress and result types (console.jobs.ab runs the job).

Apart from the job so that what only carries them (the session's events, the console's A/B
dialog) does not import the job's machinery (sweeps, engines, SSH): the console starts faster.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from console.bench.bootfloor import BootFloor
from console.bench.compare import Comparison
from console.bench.models import StepResult
from console.bench.verdict import Verdict
from console.config_models import SweepPreset
from console.jobs.upgrade import SideFacts
from console.server.records import LaunchRecord

ABStage = Literal["validate", "restart-a", "sweep-a", "restart-b", "sweep-b", "compare", "done"]


@dataclass(frozen=True)
class ABRequest:
    """What the operator asked for: the profiles, the preset, and how to repeat."""

    a: str
    b: str
    preset: str = "default"
    repeats: int = 3
    interleave: bool = False
    concurrency: tuple[int, ...] | None = None  # overrides the preset's levels
    # Overrides the preset's workload: a cause's A/B repeats the diagnosed run's workload
    # (console.app.suggest_ab); `preset` then names that run.
    workload: SweepPreset | None = field(default=None, compare=True, hash=False)

    def spec(self, preset: SweepPreset) -> SweepPreset:
        """The preset (or the request's workload) with this request's levels (repeats are per
        pass, see run_ab)."""
        base = self.workload if self.workload is not None else preset
        if not self.concurrency:
            return base
        return base.model_copy(update={"concurrency": list(self.concurrency)})


@dataclass(frozen=True)
class ABProgress:
    stage: ABStage
    message: str = ""
    profile: str | None = None  # the profile being restarted into or swept


@dataclass(frozen=True)
class ABResult:
    name_a: str
    name_b: str
    record_a: LaunchRecord
    record_b: LaunchRecord
    steps_a: tuple[StepResult, ...]
    steps_b: tuple[StepResult, ...]
    comparison: Comparison
    verdict: Verdict
    flags: tuple[tuple[str, str, str], ...] = ()  # (flag, A, B) where they differ
    repeats: int = 1
    interleave: bool = False
    run_a: int | None = None
    run_b: int | None = None
    pair_id: int | None = None
    metric: str = "total tok/s"
    restart_timings: dict[str, dict[str, float]] = field(default_factory=dict)
    # The boot-to-boot floor the verdict used (stored, of A's host+profile+version), or the
    # one an A/A measured; None when unknown.
    floor: BootFloor | None = None
    # What each side ran ("A", "B"): its server's version and its flags as launched (an
    # upgrade A/B translates them per install, console/jobs/upgrade.py).
    sides: dict[str, SideFacts] = field(default_factory=dict)

    @property
    def note(self) -> str:
        """The verdict in one sentence (the knee), as the console's status line says it."""
        return self.verdict.sentence

    def series(self) -> dict[str, list[tuple[int, float]]]:
        """Per label, (concurrency, mean metric) points for the overlay chart."""
        out: dict[str, list[tuple[int, float]]] = {}
        for point in self.verdict.points:
            out.setdefault(self.name_a, []).append((point.concurrency, point.mean_a))
            out.setdefault(self.name_b, []).append((point.concurrency, point.mean_b))
        return out
