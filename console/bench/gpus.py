"""Which GPUs serve the model: the one answer the per-GPU tok/s (JSON, report and chart) and the
energy per token both use.

How many: tp_size x pp_size, times dp_size unless DP attention splits the TP group instead
(SGLang python/sglang/srt/server_args.py: with --enable-dp-attention, dp_size must divide
tp_size and the TP ranks are the GPUs; without it the data-parallel controller starts dp_size
replicas of tp_size x pp_size GPUs each, srt/managers/data_parallel_controller.py).

Which: SGLang 0.5.23 places each rank on CUDA device
`base_gpu_id + dp_offset + pp_rank * tp_size + tp_rank * gpu_id_step`, each DP replica
`tp_size * pp_size * gpu_id_step` after the last (launch_dp_schedulers and
launch_tensor_parallel_group in
https://github.com/sgl-project/sglang/blob/v0.5.23/python/sglang/srt/managers/data_parallel_controller.py).
Those are CUDA ordinals: the launch's CUDA_VISIBLE_DEVICES maps them to the GPU agent's
indices (NVML's, in PCI bus order; CUDA's default order agrees on a host of one GPU model,
CUDA_DEVICE_ORDER=PCI_BUS_ID makes it agree everywhere). A list of UUIDs or MIG devices, or a
server spread over nodes, leaves the indices unknown: then only the count is known.

What the server reported in /server_info comes first, then the profile's flags (what the
launch asked for), then the number of devices CUDA_VISIBLE_DEVICES lists.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Flag names as SGLang's argparse dests (server_args.py), long aliases folded in.
_ALIASES = {"tensor_parallel_size": "tp_size", "pipeline_parallel_size": "pp_size",
            "data_parallel_size": "dp_size"}
_KEYS = ("tp_size", "pp_size", "dp_size", "enable_dp_attention", "attn_dp_size", "base_gpu_id",
         "gpu_id_step", "nnodes")


@dataclass(frozen=True)
class ServingGpus:
    count: int  # GPUs serving the model (1 when nothing said)
    indices: tuple[int, ...] | None  # the GPU agent's indices of those GPUs; None: unknown
    source: str  # where the count came from, in words


def _sizes(server_info: Mapping[str, Any] | None, flags: Mapping[str, Any] | None
           ) -> tuple[dict[str, Any], str] | None:
    if server_info and isinstance(server_info.get("tp_size"), int):
        return {k: server_info.get(k) for k in _KEYS}, "server_info"
    folded: dict[str, Any] = {}
    for name, value in (flags or {}).items():
        key = name.lstrip("-").replace("-", "_")
        folded[_ALIASES.get(key, key)] = value
    if any(k in folded for k in ("tp_size", "pp_size", "dp_size")):
        return {k: folded.get(k) for k in _KEYS}, "profile flags"
    return None


def _int(value: Any, default: int, least: int = 1) -> int:
    if isinstance(value, bool):
        return default
    try:
        number = int(value)
    except (TypeError, ValueError):
        return default
    return number if number >= least else default


_UNREADABLE: list[int] = []  # CUDA_VISIBLE_DEVICES set to what is no list of indices


def _visible(env: Mapping[str, str] | None) -> list[int] | None:
    """CUDA_VISIBLE_DEVICES as GPU indices; None when unset; _UNREADABLE when it names
    devices some other way (UUIDs, MIG devices)."""
    raw = (env or {}).get("CUDA_VISIBLE_DEVICES")
    if raw is None:
        return None
    parts = [p.strip() for p in raw.split(",") if p.strip()]
    return [int(p) for p in parts] if parts and all(p.isdigit() for p in parts) else _UNREADABLE


def _ordinals(sizes: Mapping[str, Any]) -> list[int]:
    tp, pp = _int(sizes.get("tp_size"), 1), _int(sizes.get("pp_size"), 1)
    # 0.5.23 spells DP attention --attn-dp-size (--enable-dp-attention is deprecated; its
    # /server_info field says whether attn_dp_size > 1: ServerArgs.resolved_dict)
    dp_attention = (sizes.get("enable_dp_attention") is True
                    or _int(sizes.get("attn_dp_size"), 1) > 1)
    dp = 1 if dp_attention else _int(sizes.get("dp_size"), 1)
    base, step = _int(sizes.get("base_gpu_id"), 0, least=0), _int(sizes.get("gpu_id_step"), 1)
    return [base + d * tp * pp * step + p * tp + t * step
            for d in range(dp) for p in range(pp) for t in range(tp)]


def serving_gpus(server_info: Mapping[str, Any] | None = None,
                 flags: Mapping[str, Any] | None = None,
                 env: Mapping[str, str] | None = None) -> ServingGpus:
    """The GPUs behind the server, from what is known of its launch (module doc)."""
    visible = _visible(env)
    found = _sizes(server_info, flags)
    if found is None:
        if visible:
            return ServingGpus(len(visible), tuple(visible), "CUDA_VISIBLE_DEVICES")
        return ServingGpus(1, None, "not known")
    sizes, source = found
    ordinals = _ordinals(sizes)
    if _int(sizes.get("nnodes"), 1) > 1:  # this host holds only its share of the ranks
        return ServingGpus(len(ordinals), None, source)
    if visible is not None:
        if max(ordinals) >= len(visible):  # also: devices not named by index
            return ServingGpus(len(ordinals), None, source)
        return ServingGpus(len(ordinals), tuple(visible[o] for o in ordinals),
                           f"{source}, CUDA_VISIBLE_DEVICES")
    return ServingGpus(len(ordinals), tuple(ordinals), source)
