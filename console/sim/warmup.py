"""A fresh server's warm-up on the simulated GPU: runtime JIT stalls and slow first steps.

Off unless `--sim-warmup` (tests that need the same figures from the first request leave it
off; the demo turns it on). What a version does, and where that comes from, is in
console/sglang/warmup.py (`WarmupTraits`): the version's runtime JIT compiles happen one per
forward step from the first step after "ready to roll", each stalling the GPU and logging
DeepGEMM's line, and every step runs slower by a share that decays with the steps run
(sglang#28706: 11 runtime JIT after a restart, a 1.7x TTFT, converged within ~50-100
requests). A simplification: DeepGEMM compiles a kernel on the first use of its (type, N, K,
groups) (compile_utils.py), whenever that comes; the simulator front-loads them, so that a
warm-up has one end to find. Counting starts at ready (`begin`): SGLang's own warm-up request
is part of the startup.
"""

from __future__ import annotations

import math

from console.sglang.warmup import (
    DEEPGEMM_SESSION_LINE,
    JIT_KERNELS,
    deepgemm_jit_line,
    warmup_traits,
)
from console.sim.logs import SimLog


class SimWarmup:
    def __init__(self, version: str, log: SimLog, prefix: str) -> None:
        self.traits = warmup_traits(version)
        self.log = log
        self.prefix = prefix
        self.steps = 0
        self.compiled = 0

    def begin(self) -> None:
        """The server is ready: its warm-up starts with the next forward step."""
        self.steps = self.compiled = 0

    def stretch(self, seconds: float) -> float:
        """A forward step of `seconds` (warm) as it runs this early in the server's life."""
        t = self.traits
        factor = 1.0 + t.slow_first * math.exp(-self.steps / t.decay_steps)
        self.steps += 1
        if self.compiled >= t.jit_kernels:
            return seconds * factor
        if self.compiled == 0:
            self.log.warning(DEEPGEMM_SESSION_LINE, self.prefix)
        kind, n, k, groups = JIT_KERNELS[self.compiled % len(JIT_KERNELS)]
        self.log.sglang(deepgemm_jit_line(kind, n, k, groups), self.prefix)
        self.compiled += 1
        return seconds * factor + t.jit_stall_s
