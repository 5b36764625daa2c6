"""Run-to-run noise of the simulated GPUs: why two runs of the same server differ.

Without it every repeat of a step measures the same number (the per-step jitter averages out
over hundreds of steps), and an A/B verdict could never be tested against noise.

Three parts, multiplied into every step's duration:
- per step: Gaussian jitter, sd 2 % clipped to +-10 % (kernel timing, scheduler overhead;
  the sim always had this one).
- per launch: one factor drawn when the server starts, sd `LAUNCH_SD`. Real servers differ
  between lifetimes by a state fixed at load (allocator layout, autotuned kernels, which GPU
  clocks the power manager settles on): mudler/vllm.cpp#349 measured vLLM reproducing within
  ~1 % across server restarts on the same box, and a runtime whose runs were tight inside one
  lifetime but ~15 % apart between lifetimes. We model the well-behaved ~1 %;
  `--sim-boot-spread F` draws it uniformly within +-F instead (the demo's noisier boots).
- drift: a mean-reverting (Ornstein-Uhlenbeck) factor in simulated time, sd `DRIFT_SD`,
  correlation time `DRIFT_TAU_S`: GPU clocks and temperature wandering under sustained load
  (AIPerf's multi-run confidence docs name "GPU clocks, background tasks" first among the
  causes of run-to-run variance). It makes repeats inside one lifetime differ, and makes
  A-then-B order matter, which interleaving A B A B cancels.

Seeded by --sim-seed (the same seed gives the same launch factor and drift path); unseeded
launches draw from the OS, so two launches of one profile differ like two real restarts.
"""

from __future__ import annotations

import math
import random

STEP_SD = 0.02
STEP_CLIP = 0.10
LAUNCH_SD = 0.01
DRIFT_SD = 0.007
DRIFT_TAU_S = 20.0


class GpuNoise:
    def __init__(self, rng: random.Random, boot_spread: float | None = None) -> None:
        self.rng = rng
        # --sim-boot-spread: a boot's kernel speed drawn within a set spread, so that an A/A
        # across fresh boots has a known floor to find (one draw either way: same seeds, same
        # drift path as without it).
        self.launch = 1.0 + (rng.gauss(0.0, LAUNCH_SD) if boot_spread is None
                             else rng.uniform(-boot_spread, boot_spread))
        self.drift = rng.gauss(0.0, DRIFT_SD)

    def advance(self, sim_seconds: float) -> None:
        """Move the drift on by `sim_seconds` of simulated GPU time (exact OU transition)."""
        if sim_seconds <= 0:
            return
        keep = math.exp(-sim_seconds / DRIFT_TAU_S)
        self.drift = self.drift * keep + self.rng.gauss(0.0, DRIFT_SD * math.sqrt(1 - keep * keep))

    def factor(self) -> float:
        """The multiplier for the next step's duration."""
        step = min(1 + STEP_CLIP, max(1 - STEP_CLIP, self.rng.gauss(1.0, STEP_SD)))
        return step * self.launch * (1.0 + self.drift)
