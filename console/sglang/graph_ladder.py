"""SGLang's decode CUDA-graph ladder: which batch sizes it captures, and which graph a batch runs.

Sources (sglang 0.5.23 wheel, paths relative to the `sglang/` package):

* default sizes: `srt/arg_groups/cuda_graph_hook.py:500-532`
  (`generate_decode_cuda_graph_batch_sizes`): without speculative decoding `[1, 2, 4, 8, 12]`,
  then steps of 8 to 256, 16 to 512, 32 beyond; with a speculative algorithm finer steps
  below 64 (`range(1, 9)`, `range(10, 33, 2)`, `range(40, 65, 4)`, then 8 and 16); the
  sizes above `max_bs` dropped and `max_bs` itself appended.
* padding: a batch runs the smallest captured size at or above it
  (`srt/model_executor/runner/base_cuda_graph_runner.py:166-180`, `_pad_to_bucket`, a
  `bisect_left` over the sizes): a batch of 33 runs the 40 graph.
* eager: a batch above the largest size cannot run a graph (`can_run_graph`,
  `srt/model_executor/runner/decode_cuda_graph_runner.py:845-890`); the size compared is
  the batch in requests (`forward_batch.batch_size`), and each captured graph holds
  `bs x num_tokens_per_req` tokens (the verify width under speculative decoding).
* capture order: largest first, "so cuda graphs share memory better"
  (`decode_cuda_graph_runner.py:1324-1329`): later, smaller graphs reuse the largest one's
  memory pool, so a capture's memory grows with its largest size more than with its count.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence


def default_decode_ladder(max_bs: int, *, speculative: bool = False) -> list[int]:
    """The sizes SGLang captures for `--cuda-graph-max-bs-decode max_bs` (padding on)."""
    if speculative:
        sizes = [*range(1, 9), *range(10, 33, 2), *range(40, 65, 4), *range(72, 257, 8),
                 *range(272, max_bs + 1, 16)]
    else:
        sizes = [1, 2, 4, 8, 12, *range(16, 257, 8), *range(272, 512, 16),
                 *range(512, max_bs + 1, 32)]
    ladder = [bs for bs in sizes if bs <= max_bs]
    if max_bs not in ladder:
        ladder.append(max_bs)
    return ladder


def padded_size(batch: int, ladder: Sequence[int]) -> int | None:
    """The captured size a decode batch of `batch` requests runs (`ladder` sorted), None when
    it is above them all (the step runs eagerly)."""
    if not ladder or batch > ladder[-1]:
        return None
    return ladder[bisect.bisect_left(ladder, batch)]
