"""A run's SLO, Pareto and energy figures in one place: the lines under the sweep table and
the keys `sweep --json`, `export` and `report` carry (console/bench/slo.py, pareto.py,
energy.py hold the arithmetic)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from console.bench.energy import cost_per_million_output, counted_words
from console.bench.models import StepResult
from console.bench.pareto import (
    ParetoPoint,
    frontier,
    pareto_json,
    pareto_points,
    run_gpus,
)
from console.bench.slo import SloKnee, slo_knee, slo_text
from console.config_models import CostConfig, SloSpec, SweepPreset


@dataclass(frozen=True)
class LevelFigures:
    """One concurrency's goodput and energy, repeats averaged (None: not measured)."""

    concurrency: int
    slo_share: float | None
    goodput_rps: float | None
    mean_power_w_per_gpu: float | None
    output_tok_per_j: float | None
    total_tok_per_j: float | None
    j_per_output_token: float | None
    cost_per_mtok: float | None


def _mean(values: Sequence[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def level_figures(steps: Sequence[StepResult], cost: CostConfig | None = None
                  ) -> list[LevelFigures]:
    grouped: dict[int, list[StepResult]] = defaultdict(list)
    for step in steps:
        if step.status == "ok" and step.metrics is not None:
            grouped[step.concurrency].append(step)
    out = []
    for concurrency, group in sorted(grouped.items()):
        slos = [s.metrics.slo for s in group if s.metrics is not None]
        energy = [s.energy for s in group]
        priced = [cost_per_million_output(s, cost) for s in group]
        out.append(LevelFigures(
            concurrency,
            _mean([x.share if x else None for x in slos]),
            _mean([x.goodput_rps if x else None for x in slos]),
            _mean([e.mean_power_w_per_gpu if e else None for e in energy]),
            _mean([e.output_tok_per_j if e else None for e in energy]),
            _mean([e.total_tok_per_j if e else None for e in energy]),
            _mean([e.j_per_output_token if e else None for e in energy]),
            _mean([p.total if p else None for p in priced]),
        ))
    return out


@dataclass(frozen=True)
class RunFigures:
    slo: SloSpec | None
    knee: SloKnee | None
    levels: list[LevelFigures]
    pareto: list[ParetoPoint]
    cost: CostConfig | None
    gpus: int = 1  # GPUs serving (run_gpus): what "per GPU" divides by
    power_counted: str | None = None  # whose power the energy figures sum, in words

    def json(self) -> dict[str, Any]:
        return {
            "slo": None if self.slo is None or self.knee is None else {
                "objectives_ms": self.slo.model_dump(exclude_none=True),
                "knee": self.knee.sentence,
                "meets_up_to": self.knee.concurrency,
            },
            "levels": [vars(level) for level in self.levels],
            "pareto": pareto_json(self.pareto),
            "gpus_serving": self.gpus,
            "energy_counts": self.power_counted,
            "cost": None if self.cost is None else self.cost.model_dump(),
        }

    def lines(self) -> list[str]:
        out = self._slo_lines()
        joules = [lv for lv in self.levels if lv.j_per_output_token is not None]
        if joules:
            lv = min(joules, key=lambda lv: lv.j_per_output_token or 0.0)
            out.append(f"energy: fewest J per output token at {lv.concurrency} "
                       f"({lv.j_per_output_token:.3f} J, {lv.output_tok_per_j:.3f} tok/J, "
                       f"{lv.mean_power_w_per_gpu:,.0f} W per GPU)")
            out.append(f"energy counts the {self.power_counted}")
        if self.pareto:
            front = ", ".join(str(p.concurrency) for p in frontier(self.pareto))
            out.append(f"Pareto (per-user tok/s vs tok/s per GPU): frontier at {front}")
        return out

    def _slo_lines(self) -> list[str]:
        if self.slo is None or self.knee is None:
            return []
        out = [f"SLO ({slo_text(self.slo)}): {self.knee.sentence}"]
        good = [lv for lv in self.levels if lv.goodput_rps is not None]
        if good:
            lv = max(good, key=lambda lv: lv.goodput_rps or 0.0)
            out.append(f"goodput: peaks at {lv.goodput_rps:,.2f} req/s at {lv.concurrency} "
                       f"({lv.slo_share or 0:.0%} of requests meet the SLO there)")
        return out


def run_summary(steps: Sequence[StepResult], spec: SweepPreset | Mapping[str, Any] | None,
                run_id: int | None = None, cost: CostConfig | None = None,
                server_info: Mapping[str, Any] | None = None, label: str = "") -> RunFigures:
    """The run's figures; `spec` is the sweep's preset (or its stored JSON form)."""
    slo = _slo_of(spec)
    return RunFigures(
        slo=slo,
        knee=slo_knee(steps, slo) if slo is not None else None,
        levels=level_figures(steps, cost),
        pareto=pareto_points(steps, gpus=run_gpus(steps, server_info), run_id=run_id,
                             label=label),
        cost=cost,
        gpus=run_gpus(steps, server_info),
        power_counted=_power_counted(steps),
    )


def _power_counted(steps: Sequence[StepResult]) -> str | None:
    """Whose power the newest measured step summed (console/bench/energy.py)."""
    measured = [s.energy for s in steps if s.energy is not None]
    return counted_words(measured[-1]) if measured else None


def _slo_of(spec: SweepPreset | Mapping[str, Any] | None) -> SloSpec | None:
    if isinstance(spec, SweepPreset):
        return spec.slo
    raw = spec.get("slo") if isinstance(spec, Mapping) else None
    if not isinstance(raw, Mapping):
        return None
    try:
        return SloSpec.model_validate(raw)
    except ValueError:
        return None  # a stored spec from a build that wrote it differently
