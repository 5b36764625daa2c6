"""The numbers a report tabulates and plots: per concurrency level (repeats averaged), per
step GPU power and utilisation, and the run's environment."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from console.bench.models import StepEnergy, StepMetrics
from console.diagnose.models import GpuPoint, RunEvidence, StepEvidence
from console.store.models import RunRecord


@dataclass(frozen=True)
class Level:
    """One concurrency level: each figure is the mean over its ok repeats (None: not measured)."""

    concurrency: int
    repeats: int
    total_tok_s: float
    output_tok_s: float
    ttft_p50_ms: float | None
    ttft_p99_ms: float | None
    itl_p50_ms: float | None
    itl_p99_ms: float | None
    # Issue 29: goodput under the run's SLO, energy, and the Pareto x axis (None: not measured).
    goodput_rps: float | None = None
    slo_share: float | None = None
    power_w_per_gpu: float | None = None
    j_per_output_token: float | None = None
    per_user_tok_s: float | None = None


# (column, Level attribute, digits) shown in a report's level table when a level has a value.
OPTIONAL_COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("SLO met %", "slo_share", 0),
    ("goodput req/s", "goodput_rps", 2),
    ("per-user tok/s", "per_user_tok_s", 1),
    ("W/GPU", "power_w_per_gpu", 0),
    ("J/out tok", "j_per_output_token", 3),
)


def optional_columns(rows: list[Level]) -> list[tuple[str, str, int]]:
    """The optional columns some level has a value for (goodput only with an SLO, ...)."""
    return [c for c in OPTIONAL_COLUMNS if any(getattr(lv, c[1]) is not None for lv in rows)]


def optional_value(level: Level, attr: str) -> float | None:
    value: float | None = getattr(level, attr)
    return value * 100 if attr == "slo_share" and value is not None else value


def _mean(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.fmean(known) if known else None


def levels(run: RunRecord) -> list[Level]:
    """Throughput is each step's headline figure (its steady-state window when it had one)."""
    grouped: dict[int, list[StepMetrics]] = defaultdict(list)
    energy: dict[int, list[StepEnergy | None]] = defaultdict(list)
    for step in run.steps:
        if step.status == "ok" and step.metrics is not None:
            grouped[step.concurrency].append(step.metrics)
            energy[step.concurrency].append(step.energy)
    out = []
    for concurrency in sorted(grouped):
        ms = grouped[concurrency]
        es = energy[concurrency]

        def avg(get: Callable[[StepMetrics], float | None], ms: list[StepMetrics] = ms
                ) -> float | None:
            return _mean([get(m) for m in ms])

        out.append(Level(
            concurrency=concurrency, repeats=len(ms),
            total_tok_s=statistics.fmean(m.headline_total_tok_s() for m in ms),
            output_tok_s=statistics.fmean(m.headline_output_tok_s() for m in ms),
            ttft_p50_ms=avg(lambda m: m.ttft_ms.p50), ttft_p99_ms=avg(lambda m: m.ttft_ms.p99),
            itl_p50_ms=avg(lambda m: m.itl_ms.p50), itl_p99_ms=avg(lambda m: m.itl_ms.p99),
            goodput_rps=avg(lambda m: m.slo.goodput_rps if m.slo else None),
            slo_share=avg(lambda m: m.slo.share if m.slo else None),
            power_w_per_gpu=_mean([e.mean_power_w_per_gpu if e else None for e in es]),
            j_per_output_token=_mean([e.j_per_output_token if e else None for e in es]),
            per_user_tok_s=avg(lambda m: 1000 / m.tpot_ms.p50 if m.tpot_ms.p50 else None),
        ))
    return out


@dataclass(frozen=True)
class GpuStep:
    """One step's GPU telemetry: power summed over the GPUs per sample, then averaged over the
    step; utilisation averaged over GPUs and samples."""

    index: int
    concurrency: int
    power_w: float | None
    util_pct: float | None
    gpus: int
    samples: int


def _by_time(points: list[GpuPoint]) -> dict[float, list[GpuPoint]]:
    grouped: dict[float, list[GpuPoint]] = defaultdict(list)
    for point in points:
        grouped[point.t].append(point)
    return grouped


def gpu_step(step: StepEvidence) -> GpuStep | None:
    if not step.gpu:
        return None
    samples = _by_time(step.gpu)
    powers = [sum(p.power_w for p in group if p.power_w is not None)
              for group in samples.values() if any(p.power_w is not None for p in group)]
    utils = [p.util for p in step.gpu if p.util is not None]
    return GpuStep(index=step.index, concurrency=step.concurrency,
                   power_w=statistics.fmean(powers) if powers else None,
                   util_pct=statistics.fmean(utils) if utils else None,
                   gpus=len({p.index for p in step.gpu}), samples=len(samples))


def gpu_steps(evidence: RunEvidence | None) -> list[GpuStep]:
    """Steps with GPU samples, in step order (none when no agent ran during the sweep)."""
    if evidence is None:
        return []
    found = (gpu_step(s) for s in sorted(evidence.steps, key=lambda s: s.index))
    return [g for g in found if g is not None]


def environment(run: RunRecord, evidence: RunEvidence | None) -> list[tuple[str, str]]:
    """(what, value) rows; every value came from the host or the run's own record."""
    meta = run.summary.meta
    rows: list[tuple[str, str]] = [("host", meta.host or "-"),
                                   ("server", meta.server_url or "-")]
    startup = evidence.startup if evidence is not None else None
    version = meta.server_version or (startup.sglang_version if startup else None)
    rows.append(("SGLang version", version or "unknown"))
    info = meta.server_info or {}
    model = info.get("model_path") or info.get("served_model_name")
    if model:
        rows.append(("model", str(model)))
    if evidence is not None:
        topo = evidence.topology
        if topo.gpu_name or topo.num_gpus:
            rows.append(("GPUs", f"{topo.num_gpus or '?'} x {topo.gpu_name or 'unknown'}"))
        if topo.driver_version:
            rows.append(("driver", topo.driver_version))
        if topo.cuda_version:
            rows.append(("CUDA", topo.cuda_version))
        if topo.nvlink is not None:
            source = f" ({topo.source})" if topo.source else ""
            rows.append(("topology", ("NVLink" if topo.nvlink else "no NVLink (PCIe)") + source))
        if evidence.startup.tp_size:
            rows.append(("tensor parallel", str(evidence.startup.tp_size)))
        rows += [(f"env {k}", v) for k, v in sorted(evidence.env.items())]
        rows.append(("evidence", ", ".join(evidence.sources) or "-"))
    else:
        rows.append(("evidence", "client only (none stored with the run)"))
    rows.append(("engine", meta.engine))
    return rows
