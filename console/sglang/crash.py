"""Crashes: the exception line that ends a traceback, and GPU out-of-memory in every wording.

A Python traceback (`Traceback (most recent call last):`, indented frames, then
`Type: message`) names its exception on the first unindented line after the frames; chained
tracebacks (`During handling of the above exception...`, `The above exception was the direct
cause...`) repeat the block and the LAST one is what killed the process. SGLang prints them
inside `Scheduler hit an exception: {traceback}` (0.5.23 `srt/managers/scheduler.py:6372`),
`TpModelWorkerClient hit an exception` (0.3/0.4) or bare (stderr).

Out of GPU memory, as PyTorch and the vendors' runtimes word it:
* `torch.OutOfMemoryError: CUDA out of memory. Tried to allocate ...` (PyTorch >= 2.5;
  `torch.cuda.OutOfMemoryError` before), `CUDA out of memory` in messages that wrap it;
* `RuntimeError: CUDA error: out of memory` (a CUDA API call, not the caching allocator:
  `cudaErrorMemoryAllocation`), `CUBLAS_STATUS_ALLOC_FAILED`;
* ROCm: `HIP out of memory`, `HIP error: out of memory`, `hipErrorOutOfMemory`;
* Ascend: `NPU out of memory` (torch_npu), `ACL_ERROR_RT_MEMORY_ALLOCATION`;
* `OutOfMemoryError` alone (the exception class in any module).
SGLang's own KV-pool messages (`Prefill out of memory. Try to lower your batch size.`) are KV
exhaustion, not GPU memory: is_oom says no to them (console/logs/catalogue.toml names them).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

TRACEBACK = "Traceback (most recent call last):"
CHAIN = (
    "During handling of the above exception",
    "The above exception was the direct cause",
)
OOM = re.compile(
    r"(?:CUDA|HIP|NPU|XPU|MUSA) out of memory"
    r"|(?:CUDA|HIP) error: out of memory"
    r"|OutOfMemoryError"
    r"|hipErrorOutOfMemory|cudaErrorMemoryAllocation|CUBLAS_STATUS_ALLOC_FAILED"
    r"|ACL_ERROR_RT_MEMORY_ALLOCATION"
)
_EXCEPTION = re.compile(r"(?:[A-Za-z_][\w.]*\.)?[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt"
                        r"|Warning|Fault)\b(?::|$)|[a-z_][\w.]*\.[A-Z]\w*:")


OOM_NEEDLES = ("out of memory", "OutOfMemoryError", "hipErrorOutOfMemory",
               "cudaErrorMemoryAllocation", "CUBLAS_STATUS_ALLOC_FAILED",
               "ACL_ERROR_RT_MEMORY_ALLOCATION")
"""A substring of every OOM match (a cheap test before the regex)."""


def is_oom(text: str) -> bool:
    """Whether `text` reports the GPU (or accelerator) out of memory, in any wording."""
    return OOM.search(text) is not None


CPP_TERMINATE = "terminate called after throwing an instance of"
"""libstdc++'s last words for an uncaught C++ exception (e.g. c10::DistBackendError from the
NCCL watchdog); the next line, `  what():  ...`, is its message."""


def exception_line(lines: Sequence[str]) -> str | None:
    """The final exception line of the (last) traceback in `lines`, e.g. `RuntimeError: CUDA
    error: out of memory`, or the `  what():  ...` line of an uncaught C++ exception (kept as
    printed); None when `lines` hold neither or the block was cut before it."""
    for index in range(len(lines) - 1, -1, -1):
        if CPP_TERMINATE in lines[index]:
            after = lines[index + 1:index + 2]
            if after and after[0].lstrip().startswith("what():"):
                return after[0].rstrip()
            break
    start = -1
    for index, line in enumerate(lines):
        if TRACEBACK in line:
            start = index
    if start < 0:
        return None
    found: str | None = None
    for line in lines[start + 1:]:
        if not line.strip() or line[:1] in (" ", "\t") or line.startswith("^"):
            if found is not None and line.strip():
                break  # a second frame block would be a new traceback
            continue
        if line.startswith(CHAIN):
            break
        if found is None:
            found = line.strip()
        else:
            break  # a multi-line message: its first line names the exception
    return found


def looks_like_exception(line: str) -> bool:
    """`SomeError: msg`, `pkg.mod.SomeError`, `KeyboardInterrupt`: a line that names an
    exception (the lines after a traceback's frames that are not its message)."""
    return _EXCEPTION.match(line.strip()) is not None


NCCL = re.compile(r"NCCL error|nccl(?:UnhandledCuda|System|Internal|Remote|InvalidUsage"
                  r"|InvalidArgument)Error|Watchdog caught collective operation timeout"
                  r"|ProcessGroupNCCL|c10::DistBackendError")
"""A collective failed or timed out (NCCL's own words, torch's watchdog, its C++ exception)."""
NCCL_NEEDLES = ("NCCL", "nccl", "Watchdog caught", "DistBackendError")
"""A substring of every NCCL match."""
CAPTURE_FRAMES = ("cuda_graph_runner.py", "capture_one_batch_size", "Capture cuda graph failed",
                  "init_device_graphs", "init_cuda_graphs", "cuda_graph_setup.py",
                  "when stream is capturing")
"""A traceback through these frames (or with this message) died capturing CUDA graphs at
startup: `cuda_graph_runner.py` `capture` / `capture_one_batch_size` (0.4-0.5.x),
`model_runner.py` `init_device_graphs` / `init_cuda_graphs`, and 0.5.23's
`model_runner_components/cuda_graph_setup.py`; SGLang's own wrapper `Capture cuda graph
failed: ...`; CUDA's own `operation not permitted when stream is capturing`."""
SERVER_FRAMES = "/sglang/srt/"
"""A frame in SGLang's server package (`python/sglang/srt/...`)."""
HARNESS_FRAMES = ("/unittest/", "/sglang/test/", "/_pytest/", "sglang.test.")
"""A traceback through a test runner's frames is the harness failing an assertion about a
server (a throughput threshold), not the server dying."""


def is_nccl_failure(text: str) -> bool:
    return NCCL.search(text) is not None


def is_capture_failure(lines: Sequence[str]) -> bool:
    """Whether a traceback (or a message) died capturing CUDA graphs."""
    return any(frame in line for line in lines for frame in CAPTURE_FRAMES)


def is_harness_traceback(lines: Sequence[str]) -> bool:
    return any(frame in line for line in lines for frame in HARNESS_FRAMES)
