"""What SGLang writes while a freshly started server is still warming up, per version.

A server that says "ready to roll" has not necessarily converged: kernels that were not
precompiled are JIT-compiled on their first use, and every request in flight waits for it
(sglang#28706: an unpatched restart of DeepSeek-V4-Pro on 8xH200 had a TTFT of 6,350 ms with
11 runtime JIT compiles against 3,661 ms converged, converging within the first ~50-100
requests; sglang#32124: DeepGEMM's JIT warm-up is a major start-up cost).

The lines (wording from SGLang 0.5.23's source, file:line there; 0.5.18 is assumed to write
the same, its package not being at hand):
- DeepGEMM, on the first use of a (kernel type, N, K, groups) not precompiled:
  `Try DeepGEMM JIT Compiling for <KIND> N=.., K=.., num_groups=.. with all Ms.`
  (srt/layers/deep_gemm_wrapper/compile_utils.py:179), after the WARNING `Entering DeepGEMM
  JIT Pre-Compile session. ...` (:169) on the first rank of a node.
- torch.compile: `Compiling a graph for shape S takes T s` / `... for dynamic shape takes T s`
  (srt/compilation/backend.py:211).
- FlashInfer's autotuner: `FlashInfer autotune completed.`
  (srt/model_executor/runner/flashinfer_autotune.py:369) and its tqdm bar `[AutoTuner]: Tuning
  fp4_gemm: 100%|...` (tests/data/logs/real/club3090-2x5090-new-capture-prefill.log).
- DeepGEMM's parallel warm-up: `PP-parallel DeepGEMM warmup start ...` / `... done in Ts`
  (compile_utils.py:589,618).
- CUDA-graph capture (startup; console/sglang/startup.py reads its figures):
  `Capture ... CUDA graph begin` / `Capture cuda graph begin`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

WarmupSign = Literal["deepgemm-jit", "torch-compile", "flashinfer-autotune", "graph-capture"]

_SIGNS: tuple[tuple[WarmupSign, re.Pattern[str]], ...] = (
    ("deepgemm-jit", re.compile(r"Try DeepGEMM JIT Compiling for <|PP-parallel DeepGEMM "
                                r"warmup start")),
    ("torch-compile", re.compile(r"Compiling a graph for (?:dynamic )?shape")),
    ("flashinfer-autotune", re.compile(r"FlashInfer autotune completed|\[AutoTuner\]: Tuning ")),
    ("graph-capture", re.compile(r"Capture (?:target (?:prefill|decode) |piecewise |)"
                                 r"(?:CUDA|cuda) graph begin")),
)

# The kernels the simulator compiles on first use (DeepGemmKernelType names, compile_utils.py
# :113-120 of 0.5.23), with the GEMM shapes of a DeepSeek-class MoE layer (N, K, groups).
JIT_KERNELS: tuple[tuple[str, int, int, int], ...] = (
    ("GROUPED_GEMM_NT_F8F8BF16_MASKED", 4096, 7168, 32),
    ("GROUPED_GEMM_NT_F8F8BF16_MASKED", 7168, 2048, 32),
    ("GROUPED_GEMM_NT_F8F8BF16_CONTIG", 4096, 7168, 32),
    ("GROUPED_GEMM_NT_F8F8BF16_CONTIG", 7168, 2048, 32),
    ("GEMM_NT_F8F8BF16", 24576, 1536, 1),
    ("GEMM_NT_F8F8BF16", 32768, 512, 1),
    ("GEMM_NT_F8F8BF16", 7168, 16384, 1),
    ("GEMM_NT_F8F8BF16", 2112, 7168, 1),
    ("GEMM_NT_F8F8BF16", 4096, 7168, 1),
    ("GEMM_NT_F8F8BF16", 7168, 2048, 1),
    ("GEMM_NT_F8F8BF16", 576, 7168, 1),
)


def deepgemm_jit_line(kind: str, n: int, k: int, groups: int) -> str:
    """The line DeepGEMM's wrapper logs (INFO) before a runtime compile (compile_utils.py:179;
    the trailing space is SGLang's)."""
    return (f"Try DeepGEMM JIT Compiling for <{kind}> N={n}, K={k}, num_groups={groups} with "
            "all Ms. It only takes a little time (typically 1 sec) if you have run "
            "`python3 -m sglang.compile_deep_gemm`. ")


DEEPGEMM_SESSION_LINE = (
    "Entering DeepGEMM JIT Pre-Compile session. It may take a long time (typically 10-20 mins) "
    "if you have not run `sglang.compile_deep_gemm`. It is recommended to run "
    "`sglang.compile_deep_gemm` with same args as `sglang.launch_server` for pre-compilation "
    "to reduce the overhead if you have not run it before. For example: `python3 -m "
    "sglang.compile_deep_gemm --model deepseek-ai/DeepSeek-V3 --tp 8 --trust-remote-code`")


def warmup_sign(line: str) -> WarmupSign | None:
    """Which warm-up sign a log line is, or None."""
    if "JIT" not in line and "ompil" not in line and "utotune" not in line \
            and "AutoTuner" not in line and "apture" not in line:
        return None  # the cheap test first: most lines are batch and access lines
    for sign, pattern in _SIGNS:
        if pattern.search(line):
            return sign
    return None


@dataclass(frozen=True)
class WarmupTraits:
    """How a fresh server of one version warms up after it says ready (the simulator plays
    it; console/sim/warmup.py). `jit_kernels`: runtime compiles, one per forward step from
    the first, each stalling the GPU `jit_stall_s`; `slow_first`: the extra share of a
    forward step's time at the first step after ready, decaying as exp(-steps/`decay_steps`)
    (allocator growth, autotuned kernels' first runs, cold caches).

    Sources: sglang#28706 (11 runtime JIT, TTFT 6,350 vs 3,661 ms converged: first steps
    ~1.7x slower, converged within ~50-100 requests). The split between versions is an
    assumption of the simulator (fewer runtime compiles in the newer release, whose startup
    precompiles more), not a measurement."""

    jit_kernels: int
    jit_stall_s: float
    slow_first: float
    decay_steps: float


_TRAITS = {
    "0.4.10": WarmupTraits(jit_kernels=11, jit_stall_s=1.2, slow_first=0.75, decay_steps=150.0),
    "0.5.18": WarmupTraits(jit_kernels=11, jit_stall_s=1.0, slow_first=0.7, decay_steps=120.0),
    "0.5.23": WarmupTraits(jit_kernels=6, jit_stall_s=0.8, slow_first=0.6, decay_steps=100.0),
}


def warmup_traits(version: str) -> WarmupTraits:
    return _TRAITS.get(version, _TRAITS["0.5.23"])
