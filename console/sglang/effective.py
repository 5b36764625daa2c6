"""Requested vs effective: what SGLang actually runs with, read from its own startup lines.

SGLang resolves or clamps several settings without being asked: max_running_requests is cut
to the KV pool ("max_running_requests was reduced from the requested N to M", 0.5.x
mem_cache/kv_cache_configurator.py resolve_max_num_reqs; 0.4.10 clamps silently), the largest
captured decode batch and the chunked-prefill size are chosen from the GPU memory when not
given (server_args.py), and an explicit value can be clamped. The effective values are in the
startup lines of every version:

- `max_total_num_tokens=..., chunked_prefill_size=..., max_prefill_tokens=...,
  max_running_requests=..., context_len=...` (managers/scheduler.py, TP0, all versions);
- the decode capture sizes: `Capture target decode CUDA graph end. bs=[...]` (0.5.23),
  `Capture target decode CUDA graph begin. ..., bs=[...], avail mem=...` (0.5.18),
  `Capture cuda graph bs [...]` (0.4.10 cuda_graph_runner.py); no capture line at all when the
  decode graph is disabled.

The grammar of these lines belongs to the log parser; this reader keeps to the few fields a
requested → effective display needs, in one place, until that parser offers them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

_SCHED = re.compile(r"max_total_num_tokens=(\d+), chunked_prefill_size=(-?\d+), "
                    r"max_prefill_tokens=(\d+), max_running_requests=(\d+)")
_REDUCED = re.compile(r"max_running_requests was reduced from the requested (\d+) to (\d+)")
_CAPTURE_BS = re.compile(r"(?:Capture target decode CUDA graph (?:begin|end)\..*?\bbs=|"
                         r"Capture cuda graph bs )\[([0-9, ]*)\]")

# profile flag name -> effective field
FLAG_FIELDS: dict[str, str] = {
    "max-running-requests": "max_running_requests",
    "chunked-prefill-size": "chunked_prefill_size",
    "cuda-graph-max-bs-decode": "cuda_graph_max_bs",
    "cuda-graph-max-bs": "cuda_graph_max_bs",
    "max-prefill-tokens": "max_prefill_tokens",
}


@dataclass(frozen=True)
class Effective:
    """The values the server runs with (None: its log did not say)."""

    max_running_requests: int | None = None
    chunked_prefill_size: int | None = None
    max_prefill_tokens: int | None = None
    max_total_num_tokens: int | None = None
    cuda_graph_max_bs: int | None = None
    capture_bs: tuple[int, ...] = ()
    running_reduced_from: int | None = None  # what was asked, when SGLang said it cut it
    notes: tuple[str, ...] = field(default=())

    def value_for(self, flag: str) -> int | None:
        key = FLAG_FIELDS.get(flag.lstrip("-"))
        value = getattr(self, key) if key else None
        return value if isinstance(value, int) else None


def read_effective(lines: Iterable[str]) -> Effective:
    """The effective values from a server's log lines (the last startup's, if it restarted)."""
    found: dict[str, Any] = {}
    for line in lines:
        if "max_total_num_tokens=" in line:
            match = _SCHED.search(line)
            if match:
                found.update(max_total_num_tokens=int(match[1]),
                             chunked_prefill_size=int(match[2]),
                             max_prefill_tokens=int(match[3]),
                             max_running_requests=int(match[4]))
        elif "was reduced from the requested" in line:
            match = _REDUCED.search(line)
            if match:
                found["running_reduced_from"] = int(match[1])
        elif "apture" in line:
            match = _CAPTURE_BS.search(line)
            if match:
                sizes = tuple(int(x) for x in match[1].split(",") if x.strip())
                found["capture_bs"] = sizes
                found["cuda_graph_max_bs"] = max(sizes) if sizes else None
    return Effective(**found)


def requested_vs_effective(flags: Mapping[str, Any], effective: Effective
                           ) -> dict[str, tuple[Any, int]]:
    """flag -> (requested, effective) for every flag whose effective value the log gave and
    that differs from what was asked (an unset flag is requested as None: SGLang chose)."""
    out: dict[str, tuple[Any, int]] = {}
    seen: set[str] = set()
    for flag, key in FLAG_FIELDS.items():
        value = getattr(effective, key)
        if not isinstance(value, int) or key in seen:
            continue
        asked = flags.get(flag)
        if asked is None and flag == "cuda-graph-max-bs-decode":
            asked = flags.get("cuda-graph-max-bs")
        if asked is None and flag == "cuda-graph-max-bs":
            continue  # shown once, under the name the profile used
        seen.add(key)
        if asked is None or str(asked) != str(value):
            out[flag] = (asked, value)
    return out


def describe(flag: str, requested: Any, effective: int) -> str:
    """`--max-running-requests 128 → 50` / `--cuda-graph-max-bs-decode (auto) → 256`."""
    asked = "(auto)" if requested is None else str(requested)
    return f"--{flag.lstrip('-')} {asked} \u2192 {effective}"
