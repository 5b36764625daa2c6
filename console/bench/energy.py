"""Energy per token over a step's steady window, and what a million output tokens cost.

The GPU agent samples each GPU's board power about once a second (NVML
`nvmlDeviceGetPowerUsage`, console/gpu/agent.py); the sweep's evidence recorder keeps every
sample with its wall-clock time (console/diagnose/recorder.py). A step's steady window
(console/bench/steady.py) is placed on that clock from the step's end: its first request
started `steady.step_s` before the last one ended, which is when the step finished.

Mean power is taken per GPU over the samples inside the window, then summed over the GPUs the
server runs on (console/bench/gpus.py: from /server_info, the profile's flags and its
CUDA_VISIBLE_DEVICES): an idle neighbour GPU, or one serving another job, is not this server's
cost. Where which GPUs serve is not known (or none of them reported), every GPU the agent
reports is summed, and the step's energy says so (`counted`). Tokens per joule are the
window's tok/s over that power, which is the energy over the window divided into its tokens.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from console.bench.gpus import ServingGpus
from console.bench.models import StepEnergy, StepResult
from console.config_models import CostConfig

J_PER_KWH = 3.6e6
PowerSample = tuple[float, int, float | None]  # (unix seconds, GPU index, watts)


def _spans(result: StepResult) -> list[tuple[str, float, float, float, float]]:
    """(window kind, start, end, output tok/s, total tok/s) to try in order: the steady window
    first, then the whole measured step."""
    m = result.metrics
    if m is None or result.finished_at <= 0:
        return []
    steady = m.steady
    step_s = steady.step_s if steady is not None and steady.step_s > 0 else m.duration_s
    first_start = result.finished_at - step_s
    spans = []
    if steady is not None and steady.reached and steady.window_s > 0:
        start = first_start + steady.start_s
        spans.append(("steady", start, start + steady.window_s,
                      steady.output_tok_s, steady.total_tok_s))
    spans.append(("step", first_start, result.finished_at, m.output_tok_s, m.total_tok_s))
    return spans


def _mean_power(samples: Iterable[PowerSample], start: float, end: float
                ) -> tuple[dict[int, float], int]:
    """Per GPU, its mean power over the samples in [start, end]; and how many samples."""
    readings: dict[int, list[float]] = defaultdict(list)
    for t, index, watts in samples:
        if watts is not None and start <= t <= end:
            readings[index].append(watts)
    count = sum(len(v) for v in readings.values())
    return {i: sum(v) / len(v) for i, v in readings.items()}, count


def step_energy(result: StepResult, samples: Iterable[PowerSample],
                serving: ServingGpus | None = None) -> StepEnergy | None:
    """The step's power and energy per token, or None when no power sample fell in it.
    `serving`: the server's GPUs; their power alone is summed when the agent reported them."""
    pool = list(samples)
    if serving is not None and serving.indices:
        wanted = set(serving.indices)
        own = [p for p in pool if p[1] in wanted]
        if own:  # the agent reports the server's GPUs: theirs alone is the server's power
            return _energy_over(result, own, "serving")
    return _energy_over(result, pool, "all")


def _energy_over(result: StepResult, pool: list[PowerSample],
                 counted: Literal["serving", "all"]) -> StepEnergy | None:
    for kind, start, end, output_tok_s, total_tok_s in _spans(result):
        per_gpu, count = _mean_power(pool, start, end)
        if not per_gpu:
            continue
        watts = sum(per_gpu.values())
        if watts <= 0:
            return None
        return StepEnergy(
            window="steady" if kind == "steady" else "step",
            window_s=end - start,
            gpus=len(per_gpu),
            samples=count,
            counted=counted,
            gpu_indices=sorted(per_gpu),
            mean_power_w_per_gpu=watts / len(per_gpu),
            output_tok_per_j=output_tok_s / watts,
            total_tok_per_j=total_tok_s / watts,
            j_per_output_token=watts / output_tok_s if output_tok_s > 0 else None,
        )
    return None


def counted_words(energy: StepEnergy) -> str:
    """Which GPUs' power a step's energy sums, in words."""
    which = ",".join(map(str, energy.gpu_indices)) or "?"
    if energy.counted == "serving":
        return f"power of the serving GPU{'s' if energy.gpus > 1 else ''} {which}"
    return (f"power of all {energy.gpus} GPUs the agent reports ({which}): which ones serve "
            "the model is not known")


@dataclass(frozen=True)
class Cost:
    """Cost per million output tokens, by what it counts (None: that price not configured)."""

    electricity: float | None
    gpu_time: float | None
    currency: str

    @property
    def total(self) -> float | None:
        parts = [p for p in (self.electricity, self.gpu_time) if p is not None]
        return sum(parts) if parts else None


def cost_per_million_output(result: StepResult, cost: CostConfig | None) -> Cost | None:
    """Electricity (J per output token x price per kWh) plus GPU time (the GPUs' hourly price
    over the output tok/s), per million output tokens."""
    if cost is None or result.metrics is None or result.energy is None:
        return None
    energy = result.energy
    electricity = None
    if cost.electricity_per_kwh is not None and energy.j_per_output_token is not None:
        electricity = energy.j_per_output_token * 1e6 / J_PER_KWH * cost.electricity_per_kwh
    gpu_time = None
    output_tok_s = result.metrics.headline_output_tok_s()
    if cost.gpu_hour is not None and output_tok_s > 0:
        gpu_time = energy.gpus * cost.gpu_hour / 3600.0 / output_tok_s * 1e6
    if electricity is None and gpu_time is None:
        return None
    return Cost(electricity, gpu_time, cost.currency)


def energy_change_pct(a: Iterable[StepResult], b: Iterable[StepResult],
                      levels: Iterable[int] | None = None) -> float | None:
    """B's J per output token against A's, in % (negative: B spends less), over `levels`
    (default: every level both measured): each level's mean, then the mean of the changes."""
    def per_level(steps: Iterable[StepResult]) -> dict[int, float]:
        grouped: dict[int, list[float]] = defaultdict(list)
        for s in steps:
            if s.status == "ok" and s.energy is not None and s.energy.j_per_output_token:
                grouped[s.concurrency].append(s.energy.j_per_output_token)
        return {c: sum(v) / len(v) for c, v in grouped.items()}

    ja, jb = per_level(a), per_level(b)
    common = sorted(set(ja) & set(jb) & (set(levels) if levels is not None else set(ja)))
    if not common:
        return None
    changes = [(jb[c] / ja[c] - 1.0) * 100 for c in common if ja[c] > 0]
    return sum(changes) / len(changes) if changes else None
