"""The performance model: how long a prefill or decode step takes, and how much memory fits.

Pure functions of the resolved server configuration; no I/O, no clock. The default demo
profile (8x RTX PRO 6000 on PCIe, NVFP4 MoE at TP8, Triton MoE runner without a tuned config,
decode CUDA graphs up to batch 64, NCCL_P2P_DISABLE=1) reproduces the reference story at
256 in / 128 out: ~438 total tok/s at concurrency 32, ~757 at 64, ~806 at 128. Nothing below
is a curve: each term is a mechanism, moved by the flag or setting that moves it on a host.

What is modelled (seconds per scheduler step, per GPU; sources in brackets):
- Weight streaming: decode reads every resident weight once per step, at the HBM bandwidth
  times the MoE runner's efficiency. An untuned Triton MoE runs its default kernel config
  ("Using default MoE kernel config", fused_moe_triton_config.py:162-176) and reaches a
  fraction of the bandwidth a tuned kernel does; backend speed is hardware-specific
  [plateau-causes.md "Blackwell kernel paths": flashinfer#3521, sglang PR #33208].
- Per-sequence compute (MoE GEMMs, sampling) and attention over the KV tokens in the batch.
- Tensor-parallel all-reduce: ~2 per layer per step [plateau-causes.md "Multi-GPU
  communication": ~100 per token, ~20 us each in a graph over PCIe at TP4 vs ~4 us one-shot].
  The custom (one-shot) all-reduce is used with NVLink or at most two PCIe ranks, else NCCL,
  whose ring latency grows with TP; `--disable-custom-all-reduce` forces NCCL and
  `NCCL_P2P_DISABLE=1` routes it through host memory (local-inference-lab/rtx6kpro#15).
- CUDA-graph ceiling: a decode batch above the captured ladder (`--cuda-graph-max-bs-decode`,
  ladder from cuda_graph_hook.py `generate_decode_cuda_graph_batch_sizes`, or the sizes
  `--cuda-graph-bs-decode` lists, whose largest is then the max, memory_hook.py:201-207) runs
  eagerly: every kernel is launched from Python and every all-reduce waits for the slowest
  rank's launch [sglang#33483, PR #21005]. `--disable-cuda-graph` makes every step eager.
- Padding: a batch in a graph runs the smallest captured size at or above it, so its
  per-sequence compute is the padded size's (a batch of 33 runs the 40 graph:
  model_executor/runner/base_cuda_graph_runner.py:166-180 `_pad_to_bucket`).
- Graph memory: the capture's memory grows with the largest size (captured first, the smaller
  graphs reuse its pool: decode_cuda_graph_runner.py:1324-1329), and with auto
  `--mem-fraction-static` SGLang reserves `max_bs * 2` MB for decode graphs out of the static
  fraction, i.e. out of the KV pool (memory_hook.py:357-368 `reserve_for_graph_mb`).
  Capture time is per size (console/sim/runner.py).
- Speculative decoding (console/sim/speculative.py resolves it as SGLang 0.5.23 does): with
  `--speculative-algorithm` set the decode graphs are verify graphs of `num_draft_tokens`
  tokens per request over the speculative default ladder (cuda_graph_hook.py:517-525), so a
  step's per-token compute runs padded size x width rows and graph memory grows with the
  tokens captured; attention still reads each request's KV once (the verify tokens share
  it). Each request keeps a fixed mean accept length per step.
- Prefill scheduling (console/sim/engine.py): prefill runs first and a chunked prompt
  continues in the next round (scheduler.py `get_next_batch_to_run`), so decode waits for all
  chunks unless `--enable-mixed-chunk` lets the running batch decode inside each chunk
  (`mix_with_running`); a mixed step adds the decode requests' compute to the chunk's.
- KV pool: `max_total_num_tokens` from `--mem-fraction-static`, `--kv-cache-dtype`,
  `--max-total-tokens` (pool_configurator.py); the scheduler retracts when it is full.
- Power cap: sustained draw above the board's limit lowers SM clocks (the GPU agent's sim
  backend uses the same demand formula); compute terms stretch by max/actual clock.
- Thermal slowdown: the steady temperature for the board's draw (the agent's formula:
  ambient + 12 C + 0.085 C/W) above the slowdown threshold cuts SM clocks further
  (`--sim-ambient-c` stands in for the host's cooling).

- Layouts (console/sim/dp.py deals the requests): `--dp-size N` runs N replicas, each a
  TP group of its own with its own scheduler and KV pool, so each term above is the
  replica's (weights split over its TP ranks, all-reduces over its GPUs only). Attention DP
  (`--attn-dp-size N`, or 0.5.18's `--enable-dp-attention --dp-size N`) keeps the MLP/MoE
  tensor-parallel over all TP ranks while each of N groups runs attention on its own requests
  over `tp / N` ranks: per layer the all-reduce after attention is over that group only, and
  the MLP's input and output are an all-gather and a reduce-scatter over every rank (each a
  ring of tp - 1 hops, against the all-reduce's 2 (tp - 1)); the KV heads split over the
  attention group, and the MLP runs on the gathered batch of every group.

Not modelled: prefix caching (every prompt is new), the draft model's own forwards and an
acceptance that varies by prompt or batch (speculative decoding), expert parallelism,
attention-DP ranks waiting for each other (the sim steps each group on its own clock; SGLang
steps them together, an idle group running a dummy batch), PCIe bandwidth saturation
(all-reduce payloads are latency-bound at these batch sizes), memory-clock changes,
per-request sampling parameters, NaN propagation beyond the crash hook, thermal inertia (the
engine uses the steady temperature; the agent shows the lag).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from console.sglang.graph_ladder import default_decode_ladder, padded_size

# --- per-step fixed work -------------------------------------------------------------------
STEP_BASE_S = 0.006  # scheduler iteration, sampling, graph launch (one decode step)
PREFILL_BASE_S = 0.012
HBM_GBPS = 1792.0  # RTX PRO 6000 Blackwell Server Edition memory bandwidth (spec sheet)
# Per-sequence compute per step at TP1 for a 40 GB (bf16) model: GEMMs, norms, sampling for
# one token. It grows with the square root of the checkpoint size: a large MoE activates a
# small share of its weights per token (an assumption of this model, not a measurement).
PER_SEQ_S = 0.0015
PER_SEQ_REFERENCE_GB = 40.0
PER_KV_TOKEN_S = 6.0e-8  # decode attention per cached token, TP1
PER_PREFILL_TOKEN_S = 0.0004  # prefill compute per prompt token, TP1

# --- all-reduce ------------------------------------------------------------------------------
ALLREDUCE_PER_LAYER = 2  # after attention and after the MLP/MoE block
ONE_SHOT_ALLREDUCE_S = 4e-6  # custom all-reduce inside a graph
NCCL_HOP_S = 3.4e-6  # NCCL ring latency per hop over PCIe (20 us at TP4: 6 hops)
NCCL_HOST_MEMORY_FACTOR = 23.0  # NCCL_P2P_DISABLE=1: every hop goes through host memory
# Eager decode: Python launches every kernel, and at each all-reduce all ranks wait for the
# slowest one's launches (the straggler cost grows with the number of ranks).
EAGER_LAUNCH_S_PER_LAYER = 2.0e-4
EAGER_SYNC_S_PER_RANK = 1.7e-4
HIDDEN_BYTES_PER_TOKEN = 8192 * 2 * 64  # hidden size x bf16 x layers: all-reduce payload

# --- power ---------------------------------------------------------------------------------
THERMAL_SLOWDOWN_C = 92.0  # steady GPU temperature where the board slows down
THERMAL_CLOCK = 0.6  # SM clock share under thermal slowdown
IDLE_POWER_W = 77.0  # idle + process held (agent's SimGpu: 32 W idle + 45 W in use)
DYNAMIC_POWER_W = 720.0  # at full activity (agent's SimGpu)

# Fraction of HBM bandwidth the MoE runner reaches when streaming expert weights.
MOE_BANDWIDTH_EFFICIENCY = {
    "triton": 0.25,  # default (untuned) kernel config on this GPU
    "triton_kernel": 0.45,
    "auto": 0.85,  # dense GEMMs, or the runner SGLang picks when it has a tuned path
    "cutlass": 0.62,
    "flashinfer_cutlass": 0.62,
    "flashinfer_trtllm": 0.64,
    "deep_gemm": 0.58,
    "flashinfer_cutedsl": 0.58,
    "marlin": 0.40,
    "experimental_sgl_marlin": 0.42,
}
MOE_COMPUTE_FACTOR = {"triton": 1.12, "marlin": 1.25, "experimental_sgl_marlin": 1.2,
                      "triton_kernel": 1.05, "cutlass": 0.95, "flashinfer_cutlass": 0.95,
                      "flashinfer_trtllm": 0.92}
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


def decode_graph_ladder(max_bs: int) -> list[int]:
    """SGLang 0.5.23's decode capture sizes (cuda_graph_hook.py
    `generate_decode_cuda_graph_batch_sizes`, no speculative decoding, padding on)."""
    return default_decode_ladder(max_bs)


@dataclass(frozen=True)
class Profile:
    """Resolved configuration the model needs (derived from ServerArgs + sim options)."""

    tp: int = 1  # the TP ranks of one replica (all of them under attention DP)
    dp: int = 1  # replicas (--dp-size without attention DP)
    attn_dp: int = 1  # attention-DP groups inside the TP group (--attn-dp-size)
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
    cuda_graph_bs: tuple[int, ...] = ()
    """The sizes `--cuda-graph-bs-decode` (`--cuda-graph-bs` before 0.5.18) lists; empty: the
    default ladder up to cuda_graph_max_bs."""
    decode_cuda_graph: bool = True
    speculative: bool = False
    """A speculative algorithm is set: the speculative default ladder, verify graphs."""
    verify_tokens: int = 1
    """Tokens per request in a decode (verify) step: `num_tokens_per_req` of the capture line,
    num_draft_tokens under speculative decoding (model_runner.py:876-891), else 1."""
    torch_compile: bool = False
    max_total_tokens_override: int | None = None
    num_layers: int = 61
    nvlink: bool = False
    custom_all_reduce: bool = True  # not --disable-custom-all-reduce
    nccl_p2p_disabled: bool = False  # NCCL_P2P_DISABLE=1 in the server's environment
    power_limit_w: float = 600.0
    ambient_c: float = 28.0

    # ---- memory (per GPU) -------------------------------------------------------------------
    @property
    def gpu_memory_gb(self) -> float:
        return self.gpu_memory_mib / 1024  # SGLang's "GB" in logs is GiB

    @property
    def weight_gb_per_gpu(self) -> float:
        return self.weights_gb * QUANT_WEIGHT_FACTOR.get(self.quantization or "", 1.0) / self.tp

    @property
    def attn_tp(self) -> int:
        """The ranks one attention group spans (the whole TP group without attention DP)."""
        return max(1, self.tp // max(1, self.attn_dp))

    @property
    def gpus(self) -> int:
        """GPUs the server holds: every replica's TP ranks (attention DP adds none)."""
        return self.tp * max(1, self.dp)

    @property
    def kv_bytes_per_token_per_gpu(self) -> float:
        """The KV heads split over the ranks that run a request's attention."""
        factor = KV_DTYPE_BYTES_FACTOR.get(self.kv_cache_dtype, 1.0)
        return self.kv_bytes_per_token * factor / self.attn_tp

    @property
    def decode_ladder(self) -> list[int]:
        """The decode sizes captured: the listed ones, else SGLang's default ladder."""
        if self.cuda_graph_bs:
            return sorted(set(self.cuda_graph_bs))
        if self.speculative:
            return default_decode_ladder(self.cuda_graph_max_bs, speculative=True)
        return decode_graph_ladder(self.cuda_graph_max_bs)

    @property
    def graph_gb(self) -> float:
        """Decode graph memory: the largest size's (the pool the smaller graphs reuse), whose
        buffers hold size x verify_tokens tokens."""
        rows = self.decode_ladder[-1] * self.verify_tokens
        return 0.35 + rows * 0.0025 if self.decode_cuda_graph else 0.0

    @property
    def kv_pool_gb(self) -> float:
        return self.gpu_memory_gb * self.mem_fraction_static - self.weight_gb_per_gpu - 0.5

    @property
    def max_total_num_tokens(self) -> int:
        tokens = int(max(0.0, self.kv_pool_gb) * 2**30 / self.kv_bytes_per_token_per_gpu)
        if self.max_total_tokens_override:
            tokens = min(tokens, self.max_total_tokens_override)
        return tokens

    # ---- all-reduce --------------------------------------------------------------------------
    def path_over(self, ranks: int) -> str:
        """`none`, `custom` (one-shot), `nccl` (P2P over PCIe) or `nccl-host` (P2P disabled)
        for a collective over `ranks` GPUs.

        SGLang keeps its custom all-reduce only with NVLink or at most two PCIe ranks
        (plateau-causes.md, "Multi-GPU communication")."""
        if ranks <= 1:
            return "none"
        if self.custom_all_reduce and (self.nvlink or ranks <= 2):
            return "custom"
        return "nccl-host" if self.nccl_p2p_disabled and not self.nvlink else "nccl"

    @property
    def allreduce_path(self) -> str:
        """The path of the TP group's all-reduce (the attention group's under attention DP)."""
        return self.path_over(self.tp if self.attn_dp <= 1 else self.attn_tp)

    @property
    def allreduce_calls(self) -> int:
        return ALLREDUCE_PER_LAYER * self.num_layers if self.tp > 1 else 0

    def ring_s(self, ranks: int, hops: int) -> float:
        """One collective of `hops` ring hops over `ranks` GPUs, inside a CUDA graph."""
        path = self.path_over(ranks)
        if path == "none":
            return 0.0
        if path == "custom":
            return ONE_SHOT_ALLREDUCE_S
        factor = NCCL_HOST_MEMORY_FACTOR if path == "nccl-host" else 1.0
        return NCCL_HOP_S * hops * factor

    def allreduce_latency_s(self) -> float:
        """One all-reduce over the TP group inside a CUDA graph."""
        return self.ring_s(self.tp, 2 * (self.tp - 1))

    def comm_seconds(self) -> float:
        """Collective time of one step (graph or eager alike): two all-reduces per layer over
        the replica's TP group; under attention DP one all-reduce over the attention group
        plus the MLP's all-gather and reduce-scatter over every rank, per layer."""
        if self.attn_dp <= 1:
            return self.allreduce_calls * self.allreduce_latency_s()
        attn = self.ring_s(self.attn_tp, 2 * (self.attn_tp - 1))
        gather = self.ring_s(self.tp, self.tp - 1)
        return self.num_layers * (attn + 2 * gather)

    def eager_penalty_seconds(self) -> float:
        """What running a decode step without its CUDA graph adds."""
        launches = EAGER_LAUNCH_S_PER_LAYER * self.num_layers
        sync = self.allreduce_calls * EAGER_SYNC_S_PER_RANK * max(0, self.tp - 1)
        return launches + sync

    # ---- time --------------------------------------------------------------------------------
    @property
    def _compute_scale(self) -> float:
        # Tensor parallelism splits compute, not perfectly.
        return 1.0 / math.pow(self.tp, 0.9)

    def weight_stream_seconds(self) -> float:
        efficiency = MOE_BANDWIDTH_EFFICIENCY.get(self.moe_runner_backend, 0.6)
        return self.weight_gb_per_gpu / (HBM_GBPS * efficiency)

    def _per_seq(self) -> float:
        moe = MOE_COMPUTE_FACTOR.get(self.moe_runner_backend, 1.0)
        quant = QUANT_COMPUTE_FACTOR.get(self.quantization or "", 1.0)
        size = math.sqrt(max(1e-3, self.weights_gb) / PER_SEQ_REFERENCE_GB)
        return PER_SEQ_S * size * moe * quant * self._compute_scale

    def decode_parts(self, batch: int, kv_tokens: int, clock: float = 1.0,
                     tokens_per_req: int | None = None) -> dict[str, float]:
        """Seconds per term of one decode step; `clock` is SM clock / max (power cap);
        `tokens_per_req` overrides verify_tokens (a mixed step decodes 1 token per request)."""
        width = self.verify_tokens if tokens_per_req is None else tokens_per_req
        attn = self.decode_attention_backend
        base = STEP_BASE_S + ATTENTION_FIXED_EXTRA_S.get(attn, 0.0)
        if self.sampling_backend == "pytorch":
            base += 0.0015
        if self.torch_compile:
            base *= 0.93
        kv_factor = 0.6 if self.kv_cache_dtype.startswith("fp8") else 1.0
        attention = PER_KV_TOKEN_S * ATTENTION_FACTOR.get(attn, 1.0) * kv_factor * kv_tokens
        # Under attention DP the MLP runs on the batch gathered from every group (as many as
        # this one's, the controller dealing them evenly) and attention over this group's ranks;
        # a graph step computes its padded rows (graph_rows), verify_tokens rows per request.
        mlp_rows = self.graph_rows(batch) * width * max(1, self.attn_dp)
        attn_scale = 1.0 / math.pow(self.attn_tp, 0.9)
        return {
            "base": base / clock,
            "weights": self.weight_stream_seconds(),
            "compute": (mlp_rows * self._per_seq() + attention * attn_scale) / clock,
            "allreduce": self.comm_seconds(),
            "eager": 0.0 if self.uses_graph(batch) else self.eager_penalty_seconds(),
        }

    def decode_seconds(self, batch: int, kv_tokens: int, clock: float = 1.0) -> float:
        return sum(self.decode_parts(batch, kv_tokens, clock).values())

    def prefill_seconds(self, new_tokens: int, seqs: int, clock: float = 1.0) -> float:
        attn = ATTENTION_FACTOR.get(self.attention_backend, 1.0)
        quant = QUANT_COMPUTE_FACTOR.get(self.quantization or "", 1.0)
        per_token = PER_PREFILL_TOKEN_S * quant * (0.85 + 0.15 * attn) * self._compute_scale
        compute = (PREFILL_BASE_S + new_tokens * per_token + seqs * 1e-4) / clock
        return compute + self.weight_stream_seconds() + self.comm_seconds()

    def uses_graph(self, batch: int) -> bool:
        return self.decode_cuda_graph and batch <= self.decode_ladder[-1]

    def graph_rows(self, batch: int) -> int:
        """The rows a decode step computes: the padded size in a graph, the batch eager."""
        if not self.uses_graph(batch):
            return batch
        return padded_size(batch, self.decode_ladder) or batch

    def allreduce_bytes(self, tokens: int) -> float:
        """PCIe bytes each GPU sends (and receives) for one step over `tokens` tokens."""
        if self.tp <= 1 or self.nvlink:
            return 0.0
        payload = 2.0 * (self.tp - 1) / self.tp * HIDDEN_BYTES_PER_TOKEN * tokens
        # Through host memory every byte crosses the link twice (to host, then to the peer).
        return payload * (2.0 if self.allreduce_path == "nccl-host" else 1.0)

    # ---- power ---------------------------------------------------------------------------
    def power_w(self, activity: float, tensor: float) -> float:
        demand = IDLE_POWER_W + DYNAMIC_POWER_W * activity * (0.55 + 0.45 * tensor)
        return min(demand, self.power_limit_w * 0.975)

    def temperature_c(self, activity: float, tensor: float) -> float:
        """Steady GPU temperature for this load (the agent's SimGpu formula)."""
        return self.ambient_c + 12.0 + self.power_w(activity, tensor) * 0.085

    def thermal_slowdown(self, activity: float, tensor: float) -> bool:
        return self.temperature_c(activity, tensor) > THERMAL_SLOWDOWN_C

    def power_capped(self, activity: float, tensor: float) -> bool:
        """The board's demand at this load exceeds its power limit: SM clocks are cut."""
        demand = IDLE_POWER_W + DYNAMIC_POWER_W * activity * (0.55 + 0.45 * tensor)
        return demand > self.power_limit_w * 0.975

    def clock_ratio(self, activity: float, tensor: float) -> float:
        """SM clock / max under the board power limit (same formula as the agent's SimGpu)
        and, when the board runs too hot, thermal slowdown."""
        demand = IDLE_POWER_W + DYNAMIC_POWER_W * activity * (0.55 + 0.45 * tensor)
        limit = self.power_limit_w * 0.975
        ratio = 1.0 if demand <= limit else math.sqrt(limit / demand)
        if self.thermal_slowdown(activity, tensor):
            ratio = min(ratio, THERMAL_CLOCK)
        return ratio


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


def auto_mem_fraction(gpu_memory_mib: int, chunked: int, tp: int, pp: int = 1,
                      decode_graph_max_bs: int = 0) -> float:
    """reserved = 512 + max(chunked, 2048) * 1.5 + tp*pp/8*1024 + graphs (MB), as in
    docs/sglang.md §1.6; graphs: 1024 for the prefill graphs and the rest, plus the decode
    graphs' `max_bs * 2` (memory_hook.py:357-368 `reserve_for_graph_mb`; 0 when decode graphs
    are off)."""
    reserved = (512 + max(chunked, 2048) * 1.5 + tp * pp / 8 * 1024 + 1024
                + decode_graph_max_bs * 2)
    if gpu_memory_mib > 60 * 1024:
        reserved = max(reserved, 10240)
    return round((gpu_memory_mib - reserved) / gpu_memory_mib, 3)


def default_max_running_requests(token_capacity: int, context_len: int,
                                 requested: int | None) -> int:
    """kv_cache_configurator.py `resolve_max_num_reqs` (0.5.23): an estimate from the pool,
    or the requested value, both capped at half the token capacity."""
    if requested is not None:
        return max(1, min(requested, token_capacity // 2))
    estimated = int(token_capacity / max(1, context_len) * 512)
    estimated = max(min(estimated, 4096), 2048)
    return max(1, min(estimated, token_capacity // 2))
