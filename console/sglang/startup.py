"""Startup lines of every SGLang release: weight loading, KV allocation, CUDA-graph capture,
the scheduler's sizing line, clamps of requested settings, and the startup summary.

Wordings, by source:

* weights: `Load weight begin. avail mem=138.52 GB` / `Load weight end. elapsed=21.43 s,
  type=LlamaForCausalLM, ..., avail mem=.., mem usage=...` (0.5.23
  `srt/model_executor/model_runner.py:1273-1379`); before ~0.4.4 the end line has no `elapsed=`
  (`Load weight end. type=..., dtype=torch.bfloat16, avail mem=62.08 GB, mem usage=16.41 GB.`).
  Every TP rank writes its own pair: a slow rank is weight loading, never KV allocation.
* KV: `KV Cache is allocated. [dtype: .., ]#tokens: N, K size: .., V size: ..` or `KV size:`
  (0.5.23 `srt/mem_cache/memory_pool.py:2087-2098`), `Memory pool end. avail mem=..`.
* capture, old (up to ~0.5.10, `srt/model_executor/model_runner.py` `init_cuda_graphs`):
  `Capture cuda graph begin. This can take up to several minutes. avail mem=1.45 GB` /
  `Capture cuda graph end. Time elapsed: 7.23 s. avail mem=0.53 GB. mem usage=0.93 GB.` (plain
  `Capture cuda graph end. Time elapsed: 5.37 s` before ~0.4.1); sizes on their own line
  `Capture cuda graph bs [1, 2, 4, 8, ...]` (`cuda_graph_runner.py`); piecewise prefill graphs
  `Capture piecewise CUDA graph begin/end` and `Capture cuda graph num tokens [...]`.
* capture, new (the per-phase refactor, PR #23906): `Capture target decode CUDA graph begin.
  backend=full, num_tokens_per_req=1, bs=[1, 2, 4, 8, 12, 16, 24], avail mem=2.04 GB` with
  the sizes on the BEGIN line (0.5.18) or `Capture target decode CUDA graph end. bs=[...],
  elapsed=9.87 s, mem usage=.., avail mem=..` with them on the END line (0.5.23
  `srt/model_executor/model_runner_components/cuda_graph_setup.py:757-790`); phases `target
  prefill`, `target verify`, `draft decode`, `draft extend`.
* sizing (TP0, once per DP replica): `max_total_num_tokens=N, chunked_prefill_size=N,
  max_prefill_tokens=N, max_running_requests=N, context_len=N, available_gpu_mem=x GB`
  (0.5.23 `srt/managers/scheduler.py:1267-1276`; older releases omit some keys).
* clamps: `max_running_requests was reduced from the requested 128 to 50 (per dp worker) due to
  the available KV cache capacity.` (`srt/mem_cache/kv_cache_configurator.py` ~0.5.20+).
* `Max running requests is reset to 48 for speculative decoding. You can override this by
  explicitly setting --max-running-requests.` (server_args.py, 0.5.x with spec decoding).
* capture progress (tqdm, one line per size when not a TTY): `Capturing batches (bs=16
  avail_mem=13.56 GB):  17%|...| 1/6 [00:16<01:22, 16.57s/it]` (`cuda_graph_runner.py`
  ~0.4.9+), largest size first; `1/6` counts the sizes (CaptureSizes).
* summary: `Engine startup timings (s): load_weight=.., kv_cache_allocation=.., cuda_graph={
  prefill=.., decode=..}, ...` (0.5.23 `srt/entrypoints/engine.py:1117-1126`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

StartupKind = Literal[
    "weights_begin", "weights_end", "kv_allocated", "memory_pool_end", "capture_begin",
    "capture_end", "capture_sizes", "sizing", "clamp", "engine_timings", "ready",
]

_ELAPSED = re.compile(r"(?:elapsed=|Time elapsed: )([0-9.]+) ?s")
_BS = re.compile(r"\bbs=?\s?\[([0-9, ]*)\]")
_CAPTURE = re.compile(r"Capture ((?:[a-z]+ )*?)(?:cuda|CUDA) graph (begin|end)\b")
_CAPTURE_SIZES = re.compile(r"Capture cuda graph (bs|num tokens) \[([0-9, ]*)\]")
_PAIRS = re.compile(r"(\w+)=(-?[0-9.]+)")
_TIMINGS = re.compile(r"(\w+)=([0-9.]+)")
_CLAMP = re.compile(r"(\w+) was reduced from (?:the requested )?([0-9]+) to ([0-9]+)")
_KV_TOKENS = re.compile(r"#tokens: ([0-9]+)")
_KV_GB = re.compile(r"\b(K|V|KV) size: ([0-9.]+) GB")
_AVAIL = re.compile(r"avail mem=([0-9.]+) ?GB")
_MEM_USAGE = re.compile(r"mem usage=([0-9.]+) ?GB")
_PER_REQ = re.compile(r"num_tokens_per_req=([0-9]+)")
_RESET = re.compile(r"Max running requests is reset to ([0-9]+)")
_TQDM_BS = re.compile(r"Capturing batches \(bs=([0-9]+)[^)]*\):.*?\| *([0-9]+)/([0-9]+) ")
_TQDM_BS_ONLY = re.compile(r"Capturing batches \(bs=([0-9]+)")
_SIZING_AT = "max_total_num_tokens="
KV_ALLOCATED = "KV Cache is allocated"
_AVAIL_GB = re.compile(r"avail mem=([0-9.]+) ?GB")
_USAGE_GB = re.compile(r"mem usage=([0-9.]+) ?GB")
_ARCH = re.compile(r"\btype=([A-Za-z0-9_]{1,80})")
READY = "The server is fired up and ready to roll!"
"""0.5.23 `srt/entrypoints/http_server.py:2600`; the same words since 0.1."""
# The capture phases a decode step runs in: old-wording graphs are decode graphs (the
# piecewise ones say so), `target verify` is decode under speculative decoding.
DECODE_PHASES = frozenset({"decode", "target decode", "target verify"})


@dataclass(frozen=True, slots=True)
class StartupLine:
    kind: StartupKind
    elapsed: float | None = None
    """SGLang's own seconds (`elapsed=`, `Time elapsed:`)."""
    phase: str = ""
    """Capture lines: `decode` / `prefill` (old wording) or the new name (`target decode`)."""
    wording: Literal["old", "new", ""] = ""
    bs: tuple[int, ...] | None = None
    """Capture batch sizes printed on this line."""
    values: dict[str, float] = field(default_factory=dict)
    """sizing: every key=number; clamp: requested/effective; engine_timings: by name;
    kv_allocated: `tokens`, `kv_gb` (K + V, or KV size); capture begin/end: `avail_gb`,
    `mem_gb` (`mem usage=`), `tokens_per_req` (`num_tokens_per_req=`, new wording); weight
    lines: avail_gb, usage_gb."""
    name: str = ""
    """clamp: the setting that was reduced."""


def parse_startup(message: str) -> StartupLine | None:
    """One startup line's facts (the message after the prefix); None for other lines."""
    head = message[:12]
    if head.startswith("Load weight "):
        if message.startswith("Load weight begin"):
            return StartupLine("weights_begin", values=_gb(message))
        if message.startswith("Load weight end"):
            arch = _ARCH.search(message)
            return StartupLine("weights_end", elapsed=_elapsed(message), values=_gb(message),
                               name=arch.group(1) if arch else "")
        return None
    if head.startswith("Capture "):
        return _capture(message)
    if KV_ALLOCATED in message:
        return StartupLine("kv_allocated", values=_kv_values(message))
    if head.startswith("Memory pool"):
        return StartupLine("memory_pool_end") if message.startswith("Memory pool end") else None
    if message.startswith(_SIZING_AT):
        return parse_sizing(message)
    if message.startswith("Capturing batches"):
        return _capture_bar(message)
    if message.startswith("Max running requests is reset"):
        found = _RESET.match(message)
        return None if found is None else StartupLine(
            "clamp", name="max_running_requests", values={"effective": float(found.group(1))})
    if " was reduced from " in message:
        found = _CLAMP.search(message)
        if found is None:
            return None
        return StartupLine("clamp", name=found.group(1), values={
            "requested": float(found.group(2)), "effective": float(found.group(3))})
    if message.startswith("Engine startup timings"):
        body = message.split(":", 1)[1]
        return StartupLine("engine_timings",
                           values={k: float(v) for k, v in _TIMINGS.findall(body)})
    if message.startswith(READY):
        return StartupLine("ready")
    return None


def _gb(message: str) -> dict[str, float]:
    """A weight line's `avail mem=` (free GiB on the rank) and `mem usage=` (the weights'
    GiB on the rank), where present."""
    out = {}
    if (avail := _AVAIL_GB.search(message)) is not None:
        out["avail_gb"] = float(avail.group(1))
    if (usage := _USAGE_GB.search(message)) is not None:
        out["usage_gb"] = float(usage.group(1))
    return out


def parse_sizing(message: str) -> StartupLine | None:
    """The scheduler's sizing line, also when pasted onto the end of another line."""
    at = message.find(_SIZING_AT)
    if at < 0:
        return None
    return StartupLine("sizing", values={k: float(v) for k, v in _PAIRS.findall(message[at:])})


def _capture(message: str) -> StartupLine | None:
    sizes = _CAPTURE_SIZES.match(message)
    if sizes is not None:
        phase = "decode" if sizes.group(1) == "bs" else "prefill"
        return StartupLine("capture_sizes", phase=phase, wording="old",
                           bs=_ints(sizes.group(2)))
    found = _CAPTURE.match(message)
    if found is None:
        return None
    name = found.group(1).strip()
    wording: Literal["old", "new"]
    if not name:
        phase, wording = "decode", "old"
    elif name == "piecewise":
        phase, wording = "prefill", "old"
    else:
        phase, wording = name, "new"
    bs = _BS.search(message)
    kind: StartupKind = "capture_begin" if found.group(2) == "begin" else "capture_end"
    return StartupLine(kind, elapsed=_elapsed(message), phase=phase, wording=wording,
                       bs=None if bs is None else _ints(bs.group(1)),
                       values=_capture_values(message))


def _capture_values(message: str) -> dict[str, float]:
    """A capture line's memory figures (`avail mem=`, `mem usage=`, GB as SGLang prints:
    0.5.23 cuda_graph_setup.py:757-790, the old model_runner.py init_cuda_graphs) and the
    verify width (`num_tokens_per_req=`)."""
    values: dict[str, float] = {}
    for key, pattern in (("avail_gb", _AVAIL), ("mem_gb", _MEM_USAGE),
                         ("tokens_per_req", _PER_REQ)):
        found = pattern.search(message)
        if found is not None:
            values[key] = float(found.group(1))
    return values


def _kv_values(message: str) -> dict[str, float]:
    """`#tokens: N` and the pool's GB (`K size: a GB, V size: b GB` or `KV size: c GB`,
    0.5.23 memory_pool.py:2087-2098)."""
    values: dict[str, float] = {}
    found = _KV_TOKENS.search(message)
    if found is not None:
        values["tokens"] = float(found.group(1))
    sizes = _KV_GB.findall(message)
    if sizes:
        values["kv_gb"] = sum(float(gb) for _name, gb in sizes)
    return values


def _capture_bar(message: str) -> StartupLine | None:
    """A tqdm bar: the size being captured and `done/total` sizes (values `done`, `total`);
    without its count (a cut bar) only the size."""
    found = _TQDM_BS.match(message + " ")
    if found is not None:
        return StartupLine("capture_sizes", phase="decode", bs=(int(found.group(1)),),
                           values={"done": float(found.group(2)),
                                   "total": float(found.group(3))})
    bare = _TQDM_BS_ONLY.match(message)
    return None if bare is None else StartupLine("capture_sizes", phase="decode",
                                                 bs=(int(bare.group(1)),))


@dataclass
class CaptureSizes:
    """The decode CUDA-graph sizes a launch's capture lines show. A list line (`Capture cuda
    graph bs [...]`, `bs=[...]`) prints them all; tqdm bars (`Capturing batches (bs=1
    avail_mem=11.18 GB): 100%|...| 36/36`) print one size each and how many there are, and
    capture runs largest first (cuda_graph_runner.py reverses the list): a bar at 0/N names
    the largest. A log that keeps only the last bar holds one size of N, not the list."""

    listed: set[int] = field(default_factory=set)
    barred: set[int] = field(default_factory=set)
    total: int | None = None
    """How many sizes the bars count (their `/N`)."""
    first: int | None = None
    """The size of a bar at 0/N: the largest."""

    def add(self, line: StartupLine) -> bool:
        """Take a capture line's sizes; False when it holds no decode sizes."""
        if not line.bs or not is_decode_phase(line.phase):
            return False
        if "total" not in line.values:
            self.listed.update(line.bs)
            return True
        self.barred.update(line.bs)
        self.total = int(line.values["total"])
        if line.values["done"] == 0:
            self.first = line.bs[0]
        return True

    @property
    def sizes(self) -> list[int] | None:
        """Every size captured, when the log shows them all; None when it does not."""
        if self.listed:
            return sorted(self.listed | self.barred)
        if self.barred and (self.total is None or len(self.barred) >= self.total):
            return sorted(self.barred)
        return None

    @property
    def ceiling(self) -> int | None:
        """The largest size captured, when the log shows it."""
        sizes = self.sizes
        return max(sizes) if sizes else self.first

    @property
    def count(self) -> int | None:
        """How many sizes were captured (the list's length, else the bars' count)."""
        sizes = self.sizes
        return len(sizes) if sizes is not None else self.total


def is_decode_phase(phase: str) -> bool:
    return phase in DECODE_PHASES


def _elapsed(message: str) -> float | None:
    found = _ELAPSED.search(message)
    return float(found.group(1)) if found else None


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x.strip())
