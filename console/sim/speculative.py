"""Speculative decoding as the simulator resolves and runs it (EAGLE-family algorithms).

Resolution follows SGLang 0.5.23 (sglang wheel, paths relative to `sglang/srt/`):

* `--speculative-algorithm` is upper-cased and NEXTN is an alias of EAGLE
  (arg_groups/speculative_hook.py:134-157, `_resolve_speculative_algorithm_alias` at 81-118).
* `--max-running-requests` left unset becomes 48, with a warning
  (speculative_hook.py:1086-1094, `_handle_eagle_family`). That hook runs after the GPU
  memory settings (arg_groups/pipeline.py:218 then 306), so the decode graph ceiling keeps
  its memory-based default.
* Without `--speculative-num-steps`, `_auto_choose_speculative_params`
  (speculative_hook.py:1430-1461) picks (steps, topk, draft tokens): (5, 4, 8) for
  LlamaForCausalLM and Grok1, (3, 1, 4) for the rest; with topk 1 the draft tokens are
  steps + 1 (speculative_hook.py:1256-1266).
* The target's decode graphs become verify graphs of `num_draft_tokens` tokens per request
  (model_runner.py:876-891 `decode_num_tokens_per_req`, spec_info.py:291-301), captured
  over the speculative default ladder (arg_groups/cuda_graph_hook.py:517-525).

What a verify step yields: each request keeps `accept len` tokens (accepted drafts plus the
bonus token). The simulator uses a fixed mean, SPEC_ACCEPT_LEN, bounded by what a step can
accept (num_steps + 1 and num_draft_tokens): no acceptance model per prompt or per position.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

SPEC_ALGORITHMS = ("EAGLE", "EAGLE3", "STANDALONE")
# Mean `accept len` of a real EAGLE3 run with (steps, topk, draft tokens) = (3, 1, 4): the 140
# Decode lines of tests/data/logs/real/ascend-qwen3-30b-w8a8-tp2-eagle3-bs192.log average 2.58.
SPEC_ACCEPT_LEN = 2.58
SPEC_MAX_RUNNING = 48  # speculative_hook.py:1086-1094
RESET_WARNING = ("Max running requests is reset to 48 for speculative decoding. You can "
                 "override this by explicitly setting --max-running-requests.")


class UnmodelledAlgorithm(ValueError):
    """A speculative algorithm SGLang has and the simulator does not model (DFLASH, NGRAM..)."""


@dataclass(frozen=True)
class Speculative:
    algorithm: str
    num_steps: int
    eagle_topk: int
    num_draft_tokens: int

    @property
    def accept_len(self) -> float:
        """Tokens a request keeps per verify step (the mean the Decode line reports)."""
        return min(SPEC_ACCEPT_LEN, float(self.num_steps + 1), float(self.num_draft_tokens))

    def tokens_at(self, step: int) -> int:
        """Tokens each request keeps in decode step `step` (0-based): whole tokens whose mean
        over the steps is accept_len exactly (floor((step+1) a) - floor(step a))."""
        a = self.accept_len
        return math.floor((step + 1) * a + 1e-9) - math.floor(step * a + 1e-9)


def _auto_params(algorithm: str, arch: str) -> tuple[int, int, int]:
    """speculative_hook.py:1430-1461 `_auto_choose_speculative_params`."""
    if algorithm == "STANDALONE":
        return (3, 1, 4)
    if arch in ("LlamaForCausalLM", "Grok1ForCausalLM", "Grok1VForCausalLM"):
        return (5, 4, 8)
    return (3, 1, 4)


def resolve_speculative(sa: dict[str, Any], arch: str) -> tuple[Speculative | None, bool]:
    """Resolve the speculative fields of `sa` in place; (the result, whether
    max_running_requests was reset to 48). None when no algorithm is set."""
    algorithm = sa.get("speculative_algorithm")
    if not algorithm:
        return None, False
    algorithm = str(algorithm).upper()
    if algorithm == "NEXTN":
        algorithm = "EAGLE"
    if algorithm not in SPEC_ALGORITHMS:
        raise UnmodelledAlgorithm(f"the simulator models EAGLE, EAGLE3, NEXTN and STANDALONE "
                         f"speculative decoding, not {algorithm}")
    sa["speculative_algorithm"] = algorithm
    reset = sa.get("max_running_requests") is None
    if reset:
        sa["max_running_requests"] = SPEC_MAX_RUNNING
    if sa.get("speculative_num_steps") is None:
        steps, topk, draft = _auto_params(algorithm, arch)
        sa["speculative_num_steps"], sa["speculative_eagle_topk"] = steps, topk
        sa["speculative_num_draft_tokens"] = draft
    steps = int(sa["speculative_num_steps"])
    topk = int(sa.get("speculative_eagle_topk") or 1)
    sa["speculative_eagle_topk"] = topk
    if topk == 1 or sa.get("speculative_num_draft_tokens") is None:
        sa["speculative_num_draft_tokens"] = steps + 1
    spec = Speculative(algorithm, steps, topk, int(sa["speculative_num_draft_tokens"]))
    return spec, reset
