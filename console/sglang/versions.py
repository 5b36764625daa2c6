"""SGLang versions and what each one writes: the traits a log reader or the simulator needs.

Each `Traits` row was read from the PyPI wheel of that release (sglang==X, the files named in
the comments); a version between two rows behaves like the older row (`traits_for`), which is
the safe guess for shapes that only ever change at a release.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import total_ordering

_VERSION_RE = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


@total_ordering
@dataclass(frozen=True)
class Version:
    major: int
    minor: int
    patch: int = 0

    @classmethod
    def parse(cls, text: str) -> Version | None:
        """`0.5.23`, `v0.5.18`, `0.5.23.post1`, `sglang 0.4.10`: the first x.y[.z] in the text."""
        match = _VERSION_RE.search(text or "")
        if match is None:
            return None
        return cls(int(match[1]), int(match[2]), int(match[3] or 0))

    def _key(self) -> tuple[int, int, int]:
        return (self.major, self.minor, self.patch)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self._key() < other._key()

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"


@dataclass(frozen=True)
class Traits:
    """How one SGLang release writes its logs and takes its flags."""

    version: str
    # argparse prog: `sglang serve` has its own parser from 0.5.x (cli/serve.py); 0.4.10's
    # `python -m sglang.launch_server` builds a bare ArgumentParser() (server_args.py
    # prepare_server_args), so argparse names it after argv[0].
    prog: str
    # `server_args=ServerArgs(...)` (engine.py `logger.info(f"{server_args=}")`, 0.4.10 and
    # 0.5.18) or `server_args={...}` (0.5.23 engine.py `_server_args_for_logging`, a dict).
    server_args_dataclass: bool
    # "Init torch distributed begin." (0.4.10 model_runner.py, 0.5.18 distributed/bootstrap.py)
    # or "Init parallel begin." + "Memory baseline taken." (0.5.23 distributed/bootstrap.py).
    init_parallel_wording: bool
    # Capture lines: "single" = `Capture cuda graph begin. This can take up to several
    # minutes.` (0.4.10 model_runner.py init_cuda_graphs); "bs_on_begin" = per-phase lines with
    # `bs=[...]` on the decode *begin* line (0.5.18 cuda_graph_setup.py capture_decode_graph);
    # "bs_on_end" = `bs=[...]` on the decode *end* line (0.5.23, same function).
    capture: str
    # Prefill CUDA graphs exist (per-phase backends, 0.5.x) or not (0.4.10: decode only).
    prefill_graphs: bool
    # Batch lines: `Prefill batch. #new-seq` with a trailing ", " and no graph/throughput
    # fields on prefill (0.4.10 scheduler_metrics_mixin.py) or `Prefill batch, #new-seq`
    # (0.5.x scheduler_components/metrics_reporter.py).
    batch_dot: bool
    # "Load weight end." carries `elapsed=` (0.5.x model_runner.py) or `dtype=` (0.4.10).
    load_weight_elapsed: bool
    # "KV Cache is allocated. dtype: ..." (0.5.x memory_pool.py _finalize_allocation_log) or
    # without dtype (0.4.10 memory_pool.py MHATokenToKVPool._create_buffers).
    kv_alloc_dtype: bool
    # "Engine startup timings (s): ..." (0.5.x entrypoints/engine.py); absent in 0.4.10.
    startup_timings: bool
    # "max_running_requests was reduced from the requested N to M (per dp worker) ..."
    # (0.5.x mem_cache/kv_cache_configurator.py resolve_max_num_reqs); 0.4.10 clamps silently.
    running_cap_warning: bool
    # "Freezing GC in {context} process. gen0: ..." (utils/common.py freeze_gc, called by the
    # /freeze_gc route the warmup posts): logging level it is written at, 0 for no such line
    # (0.4.10). 0.5.18 logs it at INFO; 0.5.23 at DEBUG, so it shows with --log-level debug.
    freeze_gc_level: int
    # tokenizer_manager.py: "Gracefully exiting... Remaining number of requests N. Remaining
    # requests remaining_rids=[...]." (0.5.x) / "Gracefully exiting... remaining number of
    # requests N" (0.4.10).
    drain_rids: bool
    # `--cuda-graph-max-bs` and the per-phase flags (console.sglang.flags says which exist).
    per_phase_graph_flags: bool
    # Deprecated-flag warnings: `\033[1;33m...\033[0m` through logger.warning before logging is
    # configured (arg_groups/argparse_actions.py print_deprecated_warning, 0.5.x).
    deprecation_escape: str = "\033[1;33m"


TRAITS: tuple[Traits, ...] = (
    Traits(version="0.4.10", prog="launch_server.py", server_args_dataclass=True,
           init_parallel_wording=False, capture="single", prefill_graphs=False,
           batch_dot=True, load_weight_elapsed=False, kv_alloc_dtype=False,
           startup_timings=False, running_cap_warning=False, freeze_gc_level=0,
           drain_rids=False, per_phase_graph_flags=False),
    Traits(version="0.5.18", prog="sglang serve", server_args_dataclass=True,
           init_parallel_wording=False, capture="bs_on_begin", prefill_graphs=True,
           batch_dot=False, load_weight_elapsed=True, kv_alloc_dtype=True,
           startup_timings=True, running_cap_warning=True, freeze_gc_level=20,
           drain_rids=True, per_phase_graph_flags=True),
    Traits(version="0.5.23", prog="sglang serve", server_args_dataclass=False,
           init_parallel_wording=True, capture="bs_on_end", prefill_graphs=True,
           batch_dot=False, load_weight_elapsed=True, kv_alloc_dtype=True,
           startup_timings=True, running_cap_warning=True, freeze_gc_level=10,
           drain_rids=True, per_phase_graph_flags=True),
)

KNOWN_VERSIONS: tuple[str, ...] = tuple(t.version for t in TRAITS)
DEFAULT_VERSION = "0.5.23"
"""The newest release these notes were checked against (sglang-versions.md: latest seen)."""


def traits_for(version: str | Version | None) -> Traits:
    """The traits of `version`: the newest known release not after it (the oldest known for
    anything older, the newest for None or a version newer than every row)."""
    if version is None:
        return TRAITS[-1]
    parsed = version if isinstance(version, Version) else Version.parse(version)
    if parsed is None:
        return TRAITS[-1]
    chosen = TRAITS[0]
    for row in TRAITS:
        if Version.parse(row.version) <= parsed:
            chosen = row
    return chosen
