"""The performance model: how long a prefill or decode step takes, and how much memory fits.

Pure functions of the resolved server configuration; no I/O, no clock. Calibrated so the
default profile (TP1, 40 GB of weights, auto backends) with 1024-in/1024-out requests gives the
reference story: total tok/s rising with concurrency to about 757 at 64 and 806 at 128, then
flattening (KV capacity and the per-sequence cost cap it). Backend flags scale the terms they
would touch on real hardware, so A/B comparisons move the curve measurably.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# Per-step fixed cost (kernel launches, scheduler, sampling), per-sequence cost (weights and
# MoE GEMMs per token), per-KV-token attention cost, per-prompt-token prefill cost. Seconds.
STEP_FIXED_S = 0.0206
PER_SEQ_S = 0.0020
PER_KV_TOKEN_S = 7.8e-8
PREFILL_FIXED_S = 0.012
PER_PREFILL_TOKEN_S = 0.0002
NO_GRAPH_PENALTY_S = 0.008  # decode without CUDA graph pays kernel-launch overhead
PCIE_ALLREDUCE_FIXED_S = 0.003  # RTX PRO 6000: TP all-reduce over PCIe, no NVLink
PCIE_ALLREDUCE_PER_SEQ_S = 2.0e-5
HIDDEN_BYTES_PER_TOKEN = 8192 * 2 * 64  # hidden size x bf16 x layers: all-reduce payload

MOE_RUNNER_FACTOR = {
    "triton": 1.12,  # untuned default MoE config
    "triton_kernel": 1.05,
    "cutlass": 0.92,
    "flashinfer_cutlass": 0.92,
    "flashinfer_trtllm": 0.90,
    "deep_gemm": 0.95,
    "flashinfer_cutedsl": 0.94,
    "marlin": 1.25,
    "experimental_sgl_marlin": 1.2,
}
ATTENTION_FACTOR = {
    "triton": 1.18,
    "torch_native": 3.0,
    "flex_attention": 1.6,
    "trtllm_mha": 0.9,
    "fa4": 0.95,
    "flashinfer": 1.0,
}
ATTENTION_FIXED_EXTRA_S = {"triton": 0.0015, "torch_native": 0.01, "flex_attention": 0.004}
QUANT_WEIGHT_FACTOR = {  # memory and weight-streaming cost relative to the bf16 checkpoint
    "fp8": 0.5, "mxfp8": 0.5, "modelopt_fp8": 0.5, "w8a8_fp8": 0.5, "w8a8_int8": 0.5,
    "modelopt_fp4": 0.28, "nvfp4_online": 0.28, "mxfp4": 0.28, "petit_nvfp4": 0.28,
    "awq": 0.28, "gptq": 0.28, "awq_marlin": 0.28, "gptq_marlin": 0.28,
}
QUANT_COMPUTE_FACTOR = {"fp8": 0.72, "mxfp8": 0.72, "modelopt_fp8": 0.72, "modelopt_fp4": 0.58,
                        "nvfp4_online": 0.6, "mxfp4": 0.6, "awq": 0.85, "gptq": 0.85}
KV_DTYPE_BYTES_FACTOR = {"fp8_e5m2": 0.5, "fp8_e4m3": 0.5, "mxfp8": 0.53, "nvfp4": 0.28,
                         "fp4_mx_block16": 0.28}
KV_DTYPE_TORCH = {"fp8_e5m2": "torch.float8_e5m2", "fp8_e4m3": "torch.float8_e4m3fn",
                  "mxfp8": "torch.float8_e4m3fn", "nvfp4": "torch.uint8",
                  "fp4_mx_block16": "torch.uint8"}


@dataclass(frozen=True)
class Profile:
    """Resolved configuration the model needs (derived from ServerArgs + sim options)."""

    tp: int = 1
    dp: int = 1
    gpu_memory_mib: int = 97887
    weights_gb: float = 40.0
    kv_bytes_per_token: int = 98304
    mem_fraction_static: float = 0.857
    quantization: str | None = None
    kv_cache_dtype: str = "auto"
    attention_backend: str = "flashinfer"
    decode_attention_backend: str = "flashinfer"
    moe_runner_backend: str = "auto"
    sampling_backend: str = "flashinfer"
    cuda_graph_max_bs: int = 256
    decode_cuda_graph: bool = True
    torch_compile: bool = False
    max_total_tokens_override: int | None = None

    # ---- memory (per GPU) -------------------------------------------------------------------
    @property
    def gpu_memory_gb(self) -> float:
        return self.gpu_memory_mib / 1024  # SGLang's "GB" in logs is GiB

    @property
    def weight_gb_per_gpu(self) -> float:
        return self.weights_gb * QUANT_WEIGHT_FACTOR.get(self.quantization or "", 1.0) / self.tp

    @property
    def kv_bytes_per_token_per_gpu(self) -> float:
        factor = KV_DTYPE_BYTES_FACTOR.get(self.kv_cache_dtype, 1.0)
        return self.kv_bytes_per_token * factor / self.tp

    @property
    def graph_gb(self) -> float:
        return 0.35 + self.cuda_graph_max_bs * 0.0025 if self.decode_cuda_graph else 0.0

    @property
    def kv_pool_gb(self) -> float:
        return self.gpu_memory_gb * self.mem_fraction_static - self.weight_gb_per_gpu - 0.5

    @property
    def max_total_num_tokens(self) -> int:
        tokens = int(max(0.0, self.kv_pool_gb) * 2**30 / self.kv_bytes_per_token_per_gpu)
        if self.max_total_tokens_override:
            tokens = min(tokens, self.max_total_tokens_override)
        return tokens

    # ---- time --------------------------------------------------------------------------------
    @property
    def _compute_scale(self) -> float:
        # Tensor parallelism splits compute, not perfectly.
        return 1.0 / (self.tp**0.9)

    def _per_seq(self) -> float:
        moe = MOE_RUNNER_FACTOR.get(self.moe_runner_backend, 1.0)
        quant = QUANT_COMPUTE_FACTOR.get(self.quantization or "", 1.0)
        return PER_SEQ_S * moe * quant * self._compute_scale

    def _comm(self, seqs: int) -> float:
        if self.tp <= 1:
            return 0.0
        return PCIE_ALLREDUCE_FIXED_S * math.log2(self.tp) + PCIE_ALLREDUCE_PER_SEQ_S * seqs

    def decode_seconds(self, batch: int, kv_tokens: int) -> float:
        attn = self.decode_attention_backend
        fixed = STEP_FIXED_S + ATTENTION_FIXED_EXTRA_S.get(attn, 0.0)
        if self.sampling_backend == "pytorch":
            fixed += 0.0015
        if self.torch_compile:
            fixed *= 0.93
        if not self.uses_graph(batch):
            fixed += NO_GRAPH_PENALTY_S
        kv_factor = 0.6 if self.kv_cache_dtype.startswith("fp8") else 1.0
        attention = PER_KV_TOKEN_S * ATTENTION_FACTOR.get(attn, 1.0) * kv_factor * kv_tokens
        return fixed + batch * self._per_seq() + attention * self._compute_scale + self._comm(
            batch
        )

    def prefill_seconds(self, new_tokens: int, seqs: int) -> float:
        attn = ATTENTION_FACTOR.get(self.attention_backend, 1.0)
        quant = QUANT_COMPUTE_FACTOR.get(self.quantization or "", 1.0)
        per_token = PER_PREFILL_TOKEN_S * quant * (0.85 + 0.15 * attn)
        comm = self._comm(0) + (new_tokens * 1.5e-6 if self.tp > 1 else 0.0)
        return PREFILL_FIXED_S + new_tokens * per_token * self._compute_scale + comm + seqs * 1e-4

    def uses_graph(self, batch: int) -> bool:
        return self.decode_cuda_graph and batch <= self.cuda_graph_max_bs

    def allreduce_bytes(self, tokens: int) -> float:
        """PCIe bytes each GPU sends (and receives) for one step over `tokens` tokens."""
        if self.tp <= 1:
            return 0.0
        return 2.0 * (self.tp - 1) / self.tp * HIDDEN_BYTES_PER_TOKEN * tokens


def auto_chunked_and_graph_bs(gpu_memory_mib: int, tp: int) -> tuple[int, int]:
    """Chunked-prefill size and decode CUDA-graph max bs by GPU memory (docs/sglang.md §1.6
    table)."""
    gib = gpu_memory_mib / 1024
    if gib < 20:
        return 2048, 8
    if gib < 35:
        return 4096, 48 if tp < 4 else 160
    if gib < 60:
        return 4096, 32 if tp < 4 else 160
    if gib < 160:
        return 8192, 256 if tp < 4 else 512
    return 16384, 512


def auto_mem_fraction(gpu_memory_mib: int, chunked: int, tp: int, pp: int = 1) -> float:
    """reserved = 512 + max(chunked, 2048) * 1.5 + tp*pp/8*1024 + graphs (MB), as in
    docs/sglang.md §1.6."""
    reserved = 512 + max(chunked, 2048) * 1.5 + tp * pp / 8 * 1024 + 1024
    if gpu_memory_mib > 60 * 1024:
        reserved = max(reserved, 10240)
    return round((gpu_memory_mib - reserved) / gpu_memory_mib, 3)
