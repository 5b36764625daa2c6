"""The plan of an A/B before it runs: which side sweeps when, and how long it will all take.

Interleaved (A B A B ...): each repeat is its own pass with its own server launch, so slow drift
(clocks, temperature) and the launch-to-launch difference land on both sides alike and end up
in the spread the verdict measures, not in the delta. Not interleaved: one launch per side,
each sweeping every repeat (half the restarts, but a launch-to-launch difference then looks
like a real one; the verdict says so).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from console.bench.engines import prompts_for
from console.bench.warmup import load_shape
from console.config_models import ServerProfile, SweepPreset

Side = Literal["A", "B"]

# Without a measured step or restart to go by: a decode interval typical of a mid-size model
# at moderate batch (reference/sglang-0.5.23.md's log examples run 20-40 ms per token), and
# the time to "fired up" of a 7-8B/70B server (reference/sglang-0.5.23.md "Typical startup
# durations", inferred there): rough, and said to be rough.
GUESS_ITL_S = 0.03
GUESS_TTFT_S = 0.5
GUESS_RESTART_S = 120.0
STEP_OVERHEAD_S = 1.0  # flush, worker start, settling
SIM_PROCESS_S = 3.0  # the simulator's stop + interpreter start + ready poll (measured, demo)


@dataclass(frozen=True)
class Pass:
    side: Side
    repeat_base: int  # the first repeat index this pass measures
    repeats: int  # repeats it measures (1 when interleaved)


def plan_passes(repeats: int, interleave: bool) -> list[Pass]:
    if interleave:
        return [Pass(side, r, 1) for r in range(repeats) for side in ("A", "B")]
    return [Pass("A", 0, repeats), Pass("B", 0, repeats)]


def order_text(passes: list[Pass]) -> str:
    return " ".join(p.side if p.repeats == 1 else f"{p.side}x{p.repeats}" for p in passes)


# Without a measurement, the decode step grows with the batch: flat up to GUESS_FLAT_BATCH
# (weight streaming dominates), then about linear (per-sequence compute and attention); the
# reference story's log runs ~60 ms per step at 16 and ~250 ms at 128 on PCIe TP8.
GUESS_FLAT_BATCH = 32


def guess_itl_s(concurrency: int) -> float:
    return GUESS_ITL_S * max(1.0, concurrency / GUESS_FLAT_BATCH)


def guess_step_s(spec: SweepPreset, concurrency: int,
                 itl_s: float | None = None) -> float:
    """A step's duration from the workload: waves x (prefill + output tokens x the decode step
    at this batch); `itl_s` is a known decode step time at this concurrency (from the
    simulator's model or an earlier run of any workload), else a rough guess."""
    if spec.step_seconds is not None and spec.num_prompts is None:
        return spec.step_seconds + STEP_OVERHEAD_S
    prompts = prompts_for(spec, concurrency) or concurrency
    waves = math.ceil(prompts / concurrency)
    itl = itl_s if itl_s is not None else guess_itl_s(concurrency)
    warm = GUESS_TTFT_S + 16 * itl if spec.warmup_prompts else 0.0
    return waves * (GUESS_TTFT_S + spec.output_len * itl) + warm + STEP_OVERHEAD_S


def sim_step_s(flags: dict[str, object], env: dict[str, str], spec: SweepPreset,
               concurrency: int) -> float | None:
    """A step's duration from the simulator's own performance model when the profile runs the
    simulator (it has --sim-* flags): waves x (the wave's prefill chunks + output tokens x
    the decode step at this batch), at --sim-speed. None for a real server."""
    if not any(str(k).startswith("sim-") for k in flags):
        return None
    from console.sim.args import parse
    from console.sim.config import resolve

    argv = ["--model-path", "m"]
    for name, value in flags.items():
        if value is None or value is False or name in ("sim-state-file",):
            continue
        argv += [f"--{name}"] if value is True else [f"--{name}", str(value)]
    try:
        args, sim, rest = parse(argv)
        cfg = resolve(args, sim, rest, env=dict(env))
    except (SystemExit, ValueError, TypeError):
        return None
    if spec.step_seconds is not None and spec.num_prompts is None:
        return spec.step_seconds + STEP_OVERHEAD_S
    profile = cfg.profile
    batch = min(concurrency, cfg.max_running_requests)
    prompts = prompts_for(spec, concurrency) or concurrency
    waves = math.ceil(prompts / batch)
    chunk = max(1, cfg.chunked_prefill_size)
    tokens = batch * spec.input_len
    prefill = sum(profile.prefill_seconds(min(chunk, tokens - done), 1)
                  for done in range(0, tokens, chunk))
    kv = batch * (spec.input_len + spec.output_len // 2)
    decode = spec.output_len * profile.decode_seconds(batch, kv)
    return (waves * (prefill + decode)) / sim.speed + STEP_OVERHEAD_S


def itl_by_level(rows: Iterable[tuple[int, float]]) -> dict[int, float]:
    """Median decode step (s) per concurrency from earlier steps of any workload on the host:
    (concurrency, ITL p50 ms) rows."""
    by_level: dict[int, list[float]] = {}
    for concurrency, itl_ms in rows:
        if itl_ms and itl_ms > 0:
            by_level.setdefault(concurrency, []).append(itl_ms / 1000.0)
    return {c: statistics.median(v) for c, v in by_level.items()}


@dataclass(frozen=True)
class Estimate:
    seconds: float
    restarts: int
    steps: int
    measured: bool  # from stored steps of the same workload (else a guess from the workload)
    modelled: bool = False  # from the sim's model or measured decode steps, not a guess

    def text(self) -> str:
        how = ("from earlier steps of this workload" if self.measured else
               "from the workload's tokens and the decode step time" if self.modelled else
               "rough guess")
        return (
            f"\u2248 {format_duration(self.seconds)} ({self.restarts} restarts, "
            f"{self.steps} steps; {how})"
        )


def estimate(
    spec: SweepPreset,
    repeats: int,
    interleave: bool,
    *,
    restart_s: float | None = None,
    measured_step_s: dict[int, float] | None = None,
    model_step_s: dict[int, float] | None = None,
    itl_s: dict[int, float] | None = None,
) -> Estimate:
    """Total time of an A/B: restarts plus every step. Per step, in order: a measured duration
    of this workload, the simulator's model (`model_step_s`), the workload's tokens at a
    decode step measured at that concurrency by any earlier run (`itl_s`), a rough guess."""
    passes = plan_passes(repeats, interleave)
    measured = measured_step_s or {}
    model = model_step_s or {}
    itl = itl_s or {}
    per_sweep = sum(
        measured.get(c, model.get(c, guess_step_s(spec, c, itl.get(c))))
        for c in spec.concurrency
    )
    steps = 2 * repeats * len(spec.concurrency)
    restart = GUESS_RESTART_S if restart_s is None else restart_s
    # Time to steady joins the restart's cost: each pass's warm-up load (console/bench/warmup.py)
    # runs at least WARMUP_MIN_ROUNDS rounds (one that warms, two that agree).
    seconds = len(passes) * (restart + warmup_guess_s(spec, measured, model, itl)) \
        + 2 * repeats * per_sweep
    known = bool(measured) and all(c in measured for c in spec.concurrency)
    modelled = not known and all(c in model or c in itl or c in measured
                                 for c in spec.concurrency)
    return Estimate(seconds, len(passes), steps, known, modelled)


WARMUP_MIN_ROUNDS = 3


def warmup_guess_s(spec: SweepPreset, measured: dict[int, float], model: dict[int, float],
                   itl: dict[int, float]) -> float:
    """A pass's warm-up load: its rounds, each a step of its prompts at its concurrency (timed
    like the sweep's own step at that level where one is known)."""
    if spec.warmup_load is None or not spec.concurrency:
        return 0.0
    concurrency, prompts = load_shape(spec.warmup_load, spec.concurrency)
    round_spec = spec.model_copy(update={"num_prompts": prompts, "step_seconds": None,
                                         "warmup_prompts": 0})
    known = measured.get(concurrency, model.get(concurrency))
    one = known * prompts / (prompts_for(spec, concurrency) or prompts) if known else \
        guess_step_s(round_spec, concurrency, itl.get(concurrency))
    return WARMUP_MIN_ROUNDS * one


WORKLOAD_KEYS = (
    "input_len", "output_len", "num_prompts", "prompts_per_concurrency", "step_seconds",
    "warmup_prompts", "endpoint", "engine",
)


def step_durations(
    spec: SweepPreset, rows: Iterable[tuple[dict[str, object], int, float, float]]
) -> dict[int, float]:
    """Median duration per concurrency of stored (run spec, concurrency, started, finished)
    rows whose run had the same workload as `spec`."""
    want = spec.model_dump(mode="json")
    by_level: dict[int, list[float]] = {}
    for run_spec, concurrency, started, finished in rows:
        if any(run_spec.get(k) != want.get(k) for k in WORKLOAD_KEYS):
            continue
        if finished > started > 0:
            by_level.setdefault(concurrency, []).append(finished - started)
    return {c: statistics.median(v) for c, v in by_level.items()}


def format_duration(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def model_steps(spec: SweepPreset, *profiles: ServerProfile | None) -> dict[int, float]:
    """Per concurrency, the simulator's modelled step time averaged over the profiles (A and
    B); empty unless every profile runs the simulator."""
    out: dict[int, float] = {}
    for c in spec.concurrency:
        times = [sim_step_s(dict(p.flags), dict(p.env), spec, c) if p is not None else None
                 for p in profiles]
        if times and all(t is not None for t in times):
            out[c] = statistics.fmean(t for t in times if t is not None)
    return out


def restart_guess(profile: ServerProfile | None) -> float | None:
    """A restart's duration when the profile says it (the simulator's startup option plus
    process start and stop), else None (GUESS_RESTART_S then)."""
    if profile is None:
        return None
    startup = profile.flags.get("sim-startup-seconds")
    if isinstance(startup, int | float) and not isinstance(startup, bool):
        return float(startup) + SIM_PROCESS_S
    return None
