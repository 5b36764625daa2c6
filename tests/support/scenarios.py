"""The scenario battery's profiles: a healthy TP8 base and one operator change each.

The base is a ~240B-parameter bf16 model (480 GB, 60 GB per GPU) at TP8 on an NVLink host of
8 RTX PRO 6000-class GPUs, SGLang's defaults otherwise; the load is SGLang bench_serving's
random dataset (lengths uniform in [0.5 x, 1 x]), 1024 in / 128 out, 4 prompts per
concurrency, concurrency 8, 32, 128, 256.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.support.virtual_sweep import Client

BASE_FLAGS: dict[str, Any] = {"tp-size": 8, "sim-nvlink": True, "sim-weights-gb": 480,
                              "sim-seed": 1}
BASE_SPEC: dict[str, Any] = {"concurrency": [8, 32, 128, 256], "input_len": 1024,
                             "output_len": 128, "range_ratio": 0.5, "flush_cache": False}


@dataclass(frozen=True)
class Scenario:
    name: str
    expected: str | None  # the top cause or candidate; None: nothing above the noise
    flags: dict[str, Any] = field(default_factory=dict)  # over BASE_FLAGS (None removes)
    env: dict[str, str] = field(default_factory=dict)
    spec: dict[str, Any] = field(default_factory=dict)  # over BASE_SPEC
    client: Client | None = None
    why: str = ""
    clear: bool = True  # the expected mechanism explains >= the clear-cause threshold

    def all_flags(self) -> dict[str, Any]:
        merged = {**BASE_FLAGS, **self.flags}
        return {k: v for k, v in merged.items() if v is not None}


SCENARIOS = [
    Scenario("healthy", None, why="the base itself"),
    Scenario("graph-ceiling", "cuda-graph-ceiling", {"cuda-graph-max-bs-decode": 32},
             why="graphs captured for small batches only, to save memory"),
    Scenario("p2p-off-pcie", "tp-allreduce-pcie", {"sim-nvlink": None},
             env={"NCCL_P2P_DISABLE": "1"},
             why="a PCIe host of the same GPUs with the NCCL hang workaround set"),
    # NCCL over NVLink costs ~5 ms a step where weight streaming takes ~40: the honest
    # answer at the saturated level is "no clear cause".
    Scenario("custom-ar-off", None, {"disable-custom-all-reduce": True},
             why="custom all-reduce disabled while chasing a hang"),
    Scenario("running-cap", "running-cap", {"max-running-requests": 32},
             why="a cap left over from a latency-sensitive deployment"),
    # On this base a bigger batch adds little throughput (per-sequence compute dominates at
    # 256), so the pool that holds 166 of 256 costs a few % only: a candidate, not a cause.
    Scenario("kv-full", "kv-cache-full", {"mem-fraction-static": 0.65}, clear=False,
             why="a third of the memory left to another process (auto is 0.895)"),
    Scenario("long-prompts-big-chunk", "prefill-interference",
             {"chunked-prefill-size": 16384}, spec={"input_len": 16000, "output_len": 256,
                                                    "concurrency": [4, 8, 16, 32]},
             why="bigger prefill chunks for a long-document workload"),
    Scenario("no-cuda-graph", "eager-decode", {"disable-cuda-graph": True},
             why="graphs disabled while debugging"),
    Scenario("moe-triton", "moe-untuned", {"moe-runner-backend": "triton"},
             why="the Triton MoE runner picked without a tuned config for this GPU"),
    Scenario("power-limit", "power-cap", {"sim-power-limit-w": 350},
             why="nvidia-smi -pl 350 on every board (a rack power budget)"),
    Scenario("hot-intake", "thermal", {"sim-ambient-c": 60},
             why="a failed fan wall: 60 C intake air"),
    Scenario("one-wave", "too-few-prompts", spec={"prompts_per_concurrency": 1},
             why="prompts = concurrency to save time"),
    Scenario("one-slow-worker", "client-bound",
             client=Client(workers=1, cpu_per_chunk_s=0.002),
             why="one load-generator worker re-tokenizing and validating every chunk: ~2 ms "
                 "of CPU a chunk"),
]


# Held out from the rules' tuning (issue 37): two causes stacked, and a change that acts on
# latency, not throughput. tests/test_diagnose_stacked.py runs an A/B per suggestion.
HELD_OUT = [
    Scenario("ceiling-and-cap", "cuda-graph-ceiling",
             {"cuda-graph-max-bs-decode": 40, "max-running-requests": 160},
             why="graphs captured to 40 to save memory, and a cap of 160 from another host: "
                 "at c=256, 160 run eagerly and 96 wait"),
    Scenario("long-prompts-short-answers", "prefill-interference",
             {"chunked-prefill-size": 16384},
             spec={"input_len": 6000, "output_len": 64, "concurrency": [4, 8, 16, 32]},
             why="6000-token documents, 64-token answers, big chunks: prefill compute bounds "
                 "throughput, the stalls cost each request's latency"),
]
