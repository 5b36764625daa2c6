"""Resolve parsed SGLang args into the values a real server would log and report.

SGLang resolves `None` defaults late (docs/sglang.md §1.6); the simulator does the same for the
fields it models, so `server_args={...}`, `/server_info` and the batch logs agree.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field
from typing import Any

from console.sglang.flags import options
from console.sglang.versions import Traits, traits_for
from console.sim.args import SimOptions
from console.sim.model import (
    Profile,
    auto_chunked_and_graph_bs,
    auto_mem_fraction,
    default_max_running_requests,
)
from console.sim.speculative import Speculative, resolve_speculative

DEFAULT_CONTEXT_LEN = 131072
# 0.4.10's parser stores --tp-size as tensor_parallel_size etc.; ServerArgs.from_cli_args
# (srt/server_args.py of v0.4.10) copies them to the dataclass fields.
CLI_DEST_FIELDS = {"tensor_parallel_size": "tp_size", "pipeline_parallel_size": "pp_size",
                   "data_parallel_size": "dp_size", "expert_parallel_size": "ep_size"}


@dataclass(frozen=True)
class SimConfig:
    args: argparse.Namespace
    sim: SimOptions
    argv: tuple[str, ...]
    profile: Profile
    server_args: dict[str, Any]  # resolved, in argparse order, as logged and in /server_info
    # (requested, effective) when SGLang cut --max-running-requests to fit the KV pool
    running_cap_reduced: tuple[int, int] | None = None
    env: dict[str, str] = field(default_factory=dict)
    # What the command line asked for, before SGLang's resolution (None: left to SGLang)
    requested: dict[str, Any] = field(default_factory=dict)
    speculative: Speculative | None = None
    # --max-running-requests was left unset and speculative decoding set it to 48
    spec_running_reset: bool = False

    @property
    def traits(self) -> Traits:
        return traits_for(self.sim.sglang_version)

    @property
    def version(self) -> str:
        return self.traits.version

    def logged_server_args(self) -> dict[str, Any]:
        """server_args as this version prints it and reports it in /server_info: 0.5.23 its
        resolved dict; older releases their own ServerArgs fields, where the per-phase graph
        fields keep what was asked (0.5.18 resolves into cuda_graph_config only, as the
        ServerArgs repr of a real 0.5.18 log shows) and 0.4.10's cuda_graph_max_bs is resolved
        (its ServerArgs.__post_init__ sets it from the GPU memory)."""
        sa = self.server_args
        if not self.traits.server_args_dataclass:
            return dict(sa)
        fields: dict[str, Any] = {}
        for row in options(self.version):
            dest = row.get("dest") or row["names"][0][2:].replace("-", "_")
            dest = CLI_DEST_FIELDS.get(dest, dest)
            if str(row["type"]).startswith(("deprecated", "retired")) or dest in fields:
                continue
            fields[dest] = sa.get(dest, row["default"])
        if self.traits.per_phase_graph_flags:
            for key in ("cuda_graph_max_bs_decode", "cuda_graph_max_bs_prefill"):
                if key in fields:
                    fields[key] = self.requested.get(key)
            graph = {phase: dict(cfg) for phase, cfg in sa["cuda_graph_config"].items()}
            graph["decode"]["bs"] = self.profile.decode_ladder
            fields["cuda_graph_config"] = graph
        else:
            fields["cuda_graph_max_bs"] = sa["cuda_graph_max_bs_decode"]
        return fields

    @property
    def served_model_name(self) -> str:
        return str(self.server_args["served_model_name"])

    @property
    def context_len(self) -> int:
        return int(self.server_args["context_length"])

    @property
    def max_running_requests(self) -> int:
        return int(self.server_args["max_running_requests"])

    @property
    def chunked_prefill_size(self) -> int:
        return int(self.server_args["chunked_prefill_size"])

    @property
    def rank_prefix(self) -> str:
        """Scheduler rank-0 log prefix (docs/sglang.md §2.1): DP, PP, ATTN_CP, MOE_DP, TP, EP."""
        return rank_prefix(self.server_args, tp_rank=0)

    def gpus_in_use(self) -> int:
        return min(self.sim.num_gpus, self.profile.gpus)


def dp_layout(sa: dict[str, Any]) -> tuple[int, int]:
    """(replicas, attention-DP groups) of resolved server args. 0.5.23 resolves the deprecated
    `--enable-dp-attention --dp-size N` into `attn_dp_size=N, dp_size=1`
    (srt/arg_groups/parallel_hook.py:39-61 `handle_deprecated_dp_attention`; `resolve` does it
    here); releases without `--attn-dp-size` count the groups with `dp_size`."""
    dp = max(1, int(sa.get("dp_size") or 1))
    attn = max(1, int(sa.get("attn_dp_size") or 1))
    if attn == 1 and sa.get("enable_dp_attention"):
        return 1, dp
    return dp, attn


def dp_ranks(sa: dict[str, Any]) -> int:
    """Schedulers that take requests: one per replica, or one per attention-DP group."""
    replicas, attn = dp_layout(sa)
    return replicas * attn


def leader_prefix(sa: dict[str, Any], dp_rank: int) -> str:
    """The log prefix of DP rank `dp_rank`'s scheduler that prints batch and sizing lines
    (attn_tp_rank 0: 0.5.23 srt/observability/metrics_collector.py:1361-1363): `DPk TP0` for
    a replica (its TP ranks count from 0), `DPk TP{k * tp / N}` for an attention-DP group
    (its ranks are slices of the one TP group, as the real `DP12 TP12 EP12` lines show)."""
    attn = dp_layout(sa)[1]
    tp = max(1, int(sa.get("tp_size") or 1))
    if attn > 1:
        return rank_prefix(sa, dp_rank * max(1, tp // attn), dp_rank)
    return rank_prefix(sa, 0, dp_rank)


def all_prefixes(sa: dict[str, Any]) -> list[str]:
    """Every scheduler process's prefix, DP rank by DP rank."""
    replicas, attn = dp_layout(sa)
    tp = max(1, int(sa.get("tp_size") or 1))
    if attn > 1:
        return [rank_prefix(sa, t, t // max(1, tp // attn)) for t in range(tp)]
    return [rank_prefix(sa, t, d) for d in range(replicas) for t in range(tp)]


def _listed_sizes(sa: dict[str, Any]) -> list[int]:
    """`--cuda-graph-bs-decode` (0.5.18+) or `--cuda-graph-bs` (older): the decode sizes."""
    for key in ("cuda_graph_bs_decode", "cuda_graph_bs"):
        value = sa.get(key)
        if isinstance(value, list) and value:
            return sorted({int(v) for v in value if int(v) > 0})
    return []


def rank_prefix(sa: dict[str, Any], tp_rank: int, dp_rank: int = 0) -> str:
    parts: list[str] = []
    if dp_ranks(sa) > 1:
        parts.append(f"DP{dp_rank}")
    if int(sa.get("pp_size") or 1) > 1:
        parts.append("PP0")
    if int(sa.get("tp_size") or 1) > 1:
        parts.append(f"TP{tp_rank}")
    if int(sa.get("ep_size") or 1) > 1:
        parts.append(f"EP{tp_rank % int(sa['ep_size'])}")
    return "".join(f" {p}" for p in parts)


def resolve(args: argparse.Namespace, sim: SimOptions, argv: list[str],
            env: dict[str, str] | None = None) -> SimConfig:
    """`env` is the server's environment (default: this process's): NCCL_P2P_DISABLE=1 routes
    NCCL through host memory, as on a real host."""
    environ = dict(os.environ if env is None else env)
    sa: dict[str, Any] = dict(vars(args))
    traits = traits_for(sim.sglang_version)
    for long_dest, field_name in CLI_DEST_FIELDS.items():  # 0.4.10 ServerArgs.from_cli_args
        if long_dest in sa:
            sa[field_name] = sa.pop(long_dest)
    if not traits.per_phase_graph_flags:  # 0.4.10: one decode graph setting, no prefill graphs
        sa["cuda_graph_max_bs_decode"] = sa.get("cuda_graph_max_bs")
        sa["cuda_graph_backend_decode"] = "disabled" if sa.get("disable_cuda_graph") else None
        sa["cuda_graph_backend_prefill"] = "disabled"
        sa["disable_cuda_graph"] = False
    asked = {key: sa.get(key) for key in (
        "max_running_requests", "chunked_prefill_size", "cuda_graph_max_bs_decode",
        "cuda_graph_max_bs_prefill", "mem_fraction_static")}
    tp = max(1, int(sa["tp_size"]))
    pp = max(1, int(sa.get("pp_size") or 1))
    chunked_auto, graph_bs_auto = auto_chunked_and_graph_bs(sim.gpu_memory_mib, tp)
    if sa.get("chunked_prefill_size") is None:
        sa["chunked_prefill_size"] = chunked_auto
    chunked = int(sa["chunked_prefill_size"])
    listed = _listed_sizes(sa)
    if listed:  # memory_hook.py:201-207: a listed ladder sets the max to its largest size
        sa["cuda_graph_max_bs_decode"] = max(listed)
    if sa.get("cuda_graph_max_bs_decode") is None:
        sa["cuda_graph_max_bs_decode"] = graph_bs_auto
        if sa.get("max_running_requests"):
            sa["cuda_graph_max_bs_decode"] = min(graph_bs_auto, int(sa["max_running_requests"]))
    if sa.get("cuda_graph_max_bs_prefill") is None:
        sa["cuda_graph_max_bs_prefill"] = chunked if chunked > 0 else 8192
    decode_graph_backend = sa.get("cuda_graph_backend_decode")
    prefill_graph_backend = sa.get("cuda_graph_backend_prefill")
    if sa.get("disable_cuda_graph"):
        decode_graph_backend = decode_graph_backend or "disabled"
        prefill_graph_backend = prefill_graph_backend or "disabled"
    if sa.get("disable_decode_cuda_graph"):
        decode_graph_backend = "disabled"
    if sa.get("disable_prefill_cuda_graph"):
        prefill_graph_backend = "disabled"
    sa["cuda_graph_backend_decode"] = decode_graph_backend or "full"
    sa["cuda_graph_backend_prefill"] = prefill_graph_backend or "breakable"
    if sa.get("mem_fraction_static") is None:
        decode_graphs = sa["cuda_graph_backend_decode"] != "disabled"
        sa["mem_fraction_static"] = auto_mem_fraction(
            sim.gpu_memory_mib, max(chunked, 0), tp, pp,
            int(sa["cuda_graph_max_bs_decode"]) if decode_graphs else 0)
    # After the graph and memory settings, as 0.5.23's pipeline.py runs them (218, then 306).
    spec, spec_reset = resolve_speculative(sa, sim.arch)
    sa["cuda_graph_config"] = {
        "decode": {"backend": sa["cuda_graph_backend_decode"],
                   "max_bs": sa["cuda_graph_max_bs_decode"]},
        "prefill": {"backend": sa["cuda_graph_backend_prefill"],
                    "max_bs": sa["cuda_graph_max_bs_prefill"]},
    }
    # Blackwell (SM120) MHA default is trtllm_mha in the generic rule; this simulated model is
    # served with flashinfer, what SGLang picks when the model has attention sinks disabled.
    attn = sa.get("attention_backend") or "flashinfer"
    sa["attention_backend"] = attn
    if sa.get("sampling_backend") is None:
        sa["sampling_backend"] = "flashinfer"
    if sa.get("grammar_backend") is None:
        sa["grammar_backend"] = "xgrammar"
    if sa.get("served_model_name") is None:
        sa["served_model_name"] = sa["model_path"]
    if sa.get("tokenizer_path") is None:
        sa["tokenizer_path"] = sa["model_path"]
    if sa.get("context_length") is None:
        sa["context_length"] = DEFAULT_CONTEXT_LEN
    if sa.get("random_seed") is None:
        sa["random_seed"] = sim.seed if sim.seed is not None else 42
    if sa.get("page_size") is None:
        sa["page_size"] = 1
    if "attn_dp_size" in sa and sa.get("enable_dp_attention"):  # parallel_hook.py:39-61
        if int(sa.get("attn_dp_size") or 1) == 1:
            sa["attn_dp_size"], sa["dp_size"] = int(sa.get("dp_size") or 1), 1
        # 0.5.23's resolved dict reports the flag as "attention DP runs" (server_args.py:332)
        sa["enable_dp_attention"] = int(sa["attn_dp_size"]) > 1
    if sa.get("load_balance_method") == "auto":  # serving_hook.py:217-233: no PD, round robin
        sa["load_balance_method"] = "round_robin"
    replicas, attn_dp = dp_layout(sa)
    profile = Profile(
        tp=tp,
        dp=replicas,
        attn_dp=attn_dp,
        gpu_memory_mib=sim.gpu_memory_mib,
        weights_gb=sim.weights_gb,
        kv_bytes_per_token=sim.kv_bytes_per_token,
        mem_fraction_static=float(sa["mem_fraction_static"]),
        quantization=sa.get("quantization"),
        kv_cache_dtype=sa.get("kv_cache_dtype") or "auto",
        attention_backend=sa.get("prefill_attention_backend") or attn,
        decode_attention_backend=sa.get("decode_attention_backend") or attn,
        moe_runner_backend=sa.get("moe_runner_backend") or "auto",
        sampling_backend=sa["sampling_backend"],
        cuda_graph_max_bs=int(sa["cuda_graph_max_bs_decode"]),
        cuda_graph_bs=tuple(listed),
        decode_cuda_graph=sa["cuda_graph_backend_decode"] != "disabled",
        speculative=spec is not None,
        verify_tokens=spec.num_draft_tokens if spec is not None else 1,
        torch_compile=bool(sa.get("enable_torch_compile")),
        max_total_tokens_override=sa.get("max_total_tokens"),
        num_layers=sim.layers,
        nvlink=sim.nvlink,
        custom_all_reduce=not sa.get("disable_custom_all_reduce"),
        nccl_p2p_disabled=environ.get("NCCL_P2P_DISABLE", "0").strip() in ("1", "true", "yes"),
        power_limit_w=sim.power_limit_w,
        ambient_c=sim.ambient_c,
    )
    requested = sa.get("max_running_requests")
    requested = int(requested) if requested is not None else None
    effective = default_max_running_requests(
        profile.max_total_num_tokens, int(sa["context_length"]), requested)
    reduced = (requested, effective) if requested is not None and effective < requested else None
    sa["max_running_requests"] = effective
    return SimConfig(args=args, sim=sim, argv=tuple(argv), profile=profile, server_args=sa,
                     running_cap_reduced=reduced, env=environ, requested=asked,
                     speculative=spec, spec_running_reset=spec_reset)
