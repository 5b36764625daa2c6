"""Which layouts a layout duel runs, whether each fits, and what its all-reduces cost.

Pure: the profile's flags, the facts of its first launch (the weight lines' sizes, the model's
architecture, the SGLang version, NVLink or not) in; `Layout`s, refusals and shares out.

- Layouts of the same GPUs: the profile as it is (TPn), `DP2 x TP(n/2)` (two replicas behind
  SGLang's DP controller), TPn with attention DP (n groups; only where the model and version
  take it, console/sglang/layouts.py), and the custom all-reduce flipped (only where it can
  change the path: SGLang keeps its one-shot all-reduce only with NVLink or at most two PCIe
  ranks, custom_all_reduce.py "not supported on more than two PCIe-only GPUs").
- Fit: a layout's weights per GPU are the first launch's (`Load weight end. ... mem usage=`) x
  its TP over the layout's TP; it fits when they and the KV pool's floor stay under the free
  memory the first launch saw before loading (`Load weight begin. avail mem=`) x the profile's
  `--mem-fraction-static` (0.85 where unset). A layout that cannot fit is refused before its
  launch.
- All-reduce share of the decode step: collectives per step (two all-reduces per layer; under
  attention DP one over the attention group and the MLP's all-gather + reduce-scatter over
  every rank) at the diagnosis's per-call priors (console/diagnose/rules.py: one-shot 4 us,
  NCCL 3.4 us per ring hop, x22 through host memory), over the measured decode step (ITL p50
  at the top level). The all-reduce probe's NCCL figure per GPU count replaces the NCCL prior
  where P2P is on (the probe runs NCCL as the host has it; through host memory stays a prior);
  the duel also stores it with its runs, so their diagnosis reads it (`tp-allreduce-pcie`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from console.config_models import FlagValue, ServerProfile
from console.diagnose.rules import (
    ALLREDUCE_PER_LAYER,
    DEFAULT_LAYERS,
    HOST_MEMORY_FACTOR,
    NCCL_HOP_S,
    ONE_SHOT_S,
)
from console.jobs.tune_models import Change, apply
from console.sglang.layouts import attn_dp_flags, attn_dp_unsupported, replica_flags

KV_FLOOR_GB = 2.0  # the least KV pool worth launching for (a few thousand tokens of a big MoE)
DEFAULT_MEM_FRACTION = 0.85
KNOWN_KINDS = ("current", "dp", "attn-dp", "custom-ar")


@dataclass(frozen=True)
class Shape:
    """A parallel layout: replicas x TP ranks, attention-DP groups, custom all-reduce."""

    tp: int
    dp: int = 1
    attn_dp: int = 1
    custom_ar: bool = True

    @property
    def gpus(self) -> int:
        return self.tp * self.dp

    @property
    def text(self) -> str:
        core = f"DP{self.dp}xTP{self.tp}" if self.dp > 1 else f"TP{self.tp}"
        if self.attn_dp > 1:
            core += f" attn-DP{self.attn_dp}"
        return core + ("" if self.custom_ar else " no-custom-AR")


@dataclass(frozen=True)
class Layout:
    kind: str  # one of KNOWN_KINDS
    name: str  # the profile name the duel launches it as
    shape: Shape
    change: Change  # from the profile
    profile: ServerProfile


@dataclass(frozen=True)
class Facts:
    """What the profile's first launch said (console.diagnose.models.StartupFacts)."""

    weights_gb_per_gpu: float | None = None
    avail_gb: float | None = None
    architecture: str | None = None
    version: str | None = None
    nvlink: bool | None = None
    num_layers: int | None = None
    p2p_disabled: bool = False
    # Measured NCCL all-reduce microseconds at the decode message, per GPU count (the probe,
    # console/jobs/allreduce.py); empty: the priors
    measured_us: dict[int, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Plan:
    layouts: list[Layout]
    skipped: dict[str, str] = field(default_factory=dict)  # kind -> why it does not run


def _int(flags: Mapping[str, FlagValue], *names: str) -> int:
    for name in names:
        value = flags.get(name)
        if isinstance(value, int | str) and not isinstance(value, bool) and str(value).isdigit():
            return max(1, int(value))
    return 1


def shape_of(flags: Mapping[str, FlagValue]) -> Shape:
    """The layout a profile's flags launch (0.5.23's resolution of the deprecated spelling)."""
    tp = _int(flags, "tp-size", "tp", "tensor-parallel-size")
    dp = _int(flags, "dp-size", "dp", "data-parallel-size")
    attn = _int(flags, "attn-dp-size", "attention-data-parallel-size")
    if attn == 1 and flags.get("enable-dp-attention"):
        attn, dp = dp, 1
    return Shape(tp=tp, dp=dp, attn_dp=attn,
                 custom_ar=not flags.get("disable-custom-all-reduce"))


def plan(name: str, profile: ServerProfile, facts: Facts,
         wanted: tuple[str, ...] = KNOWN_KINDS) -> Plan:
    """The layouts to duel against the profile (`current` first) and why the others do not
    run. Fit is checked separately (`fits`), with the first launch's weight figures."""
    now = shape_of(profile.flags)
    layouts = [Layout("current", name, now, Change(), profile)]
    skipped: dict[str, str] = {}

    def add(kind: str, shape: Shape, flags: dict[str, FlagValue | None]) -> None:
        change = Change(flags=flags)
        layouts.append(Layout(kind, f"{name}@{kind}", shape, change, apply(profile, change)))

    if "dp" in wanted:
        if now.attn_dp > 1 or now.tp < 2 or now.tp % 2:
            skipped["dp"] = f"{now.text} has no even TP group to split into two replicas"
        else:
            flags: dict[str, FlagValue | None] = dict(replica_flags(now.tp // 2, now.dp * 2))
            add("dp", Shape(now.tp // 2, now.dp * 2, 1, now.custom_ar), flags)
    if "attn-dp" in wanted:
        why = attn_dp_unsupported(facts.architecture, facts.version)
        if now.attn_dp > 1:
            skipped["attn-dp"] = "the profile runs attention DP already"
        elif now.tp < 2:
            skipped["attn-dp"] = "attention DP splits a TP group; the profile runs TP1"
        elif why is not None:
            skipped["attn-dp"] = why
        else:
            add("attn-dp", Shape(now.tp, now.dp, now.tp, now.custom_ar),
                dict(attn_dp_flags(now.tp, facts.version)))
    if "custom-ar" in wanted:
        if facts.nvlink is False and now.tp > 2:
            skipped["custom-ar"] = (
                f"at TP{now.tp} over PCIe SGLang runs NCCL whether the custom all-reduce is "
                "on or off (custom_all_reduce.py keeps it only with NVLink or at most two "
                "PCIe ranks): nothing to measure")
        else:
            flip = not now.custom_ar
            add("custom-ar", Shape(now.tp, now.dp, now.attn_dp, flip),
                {"disable-custom-all-reduce": None if flip else True})
    return Plan(layouts, skipped)


def fits(layout: Layout, now: Shape, facts: Facts, mem_fraction: float | None
         ) -> tuple[bool | None, str]:
    """(fits, why): None when the first launch did not say its weights' size or free memory."""
    if facts.weights_gb_per_gpu is None or facts.avail_gb is None:
        return None, "fit unknown: the first launch printed no weight sizes"
    weights = facts.weights_gb_per_gpu * now.tp / layout.shape.tp
    budget = facts.avail_gb * (mem_fraction or DEFAULT_MEM_FRACTION)
    said = (f"{weights:.1f} GB of weights per GPU at TP{layout.shape.tp} + {KV_FLOOR_GB:g} GB "
            f"of KV vs {budget:.1f} GB static memory")
    return weights + KV_FLOOR_GB <= budget, said


def _ring_s(ranks: int, hops: int, shape: Shape, facts: Facts) -> float:
    if ranks <= 1:
        return 0.0
    if shape.custom_ar and (facts.nvlink or ranks <= 2):
        return ONE_SHOT_S
    host = facts.p2p_disabled and not facts.nvlink
    if ranks in facts.measured_us and not host:  # the probe's NCCL (P2P): 2 (ranks - 1) hops
        return facts.measured_us[ranks] * 1e-6 * hops / (2 * (ranks - 1))
    return NCCL_HOP_S * hops * (HOST_MEMORY_FACTOR if host else 1.0)


def collective_s(shape: Shape, facts: Facts) -> float:
    """Seconds of collectives in one decode step of this layout (the priors)."""
    layers = facts.num_layers or DEFAULT_LAYERS
    if shape.attn_dp <= 1:
        return ALLREDUCE_PER_LAYER * layers * _ring_s(shape.tp, 2 * (shape.tp - 1), shape,
                                                      facts)
    attn_tp = max(1, shape.tp // shape.attn_dp)
    attn = _ring_s(attn_tp, 2 * (attn_tp - 1), shape, facts)
    gather = _ring_s(shape.tp, shape.tp - 1, shape, facts)
    return layers * (attn + 2 * gather)


def allreduce_share(shape: Shape, facts: Facts, step_ms: float | None) -> float | None:
    """The collectives' share of a decode step of `step_ms` (None without a step time)."""
    if not step_ms or step_ms <= 0:
        return None
    return min(1.0, collective_s(shape, facts) * 1000.0 / step_ms)
