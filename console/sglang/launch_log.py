"""Reading a launching SGLang server's log: which startup step it is in, and why it failed
(the server lifecycle's progress and failure reasons: console/server/lifecycle.py).

The strings are SGLang 0.5.23's (docs/sglang.md §2.4, §2.5); they have been stable for several
releases. Unknown lines are simply not progress; failure reasons fall back to the last lines.
The startup lines' numbers (sizes, timings) are read by console/sglang/startup.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from console.sglang.batch import PREFILL_BATCH
from console.sglang.endpoints import GENERATE, MODEL_INFO
from console.sglang.server_args import SERVER_ARGS
from console.sglang.startup import KV_ALLOCATED
from console.sglang.startup import READY as READY_LINE

HTTP_UP = "Uvicorn running on"
"""The HTTP server's first line (uvicorn's, as SGLang serves it)."""


class StartupStep(StrEnum):
    """What the server's log says it is doing (docs/sglang.md §2.4), in order."""

    LAUNCHED = "launched"
    ARGS = "server args"
    LOAD_WEIGHTS = "load weights"
    KV_CACHE = "KV cache"
    CUDA_GRAPHS = "CUDA graphs"
    HTTP = "HTTP server"
    WARMUP = "warmup"
    READY = "ready"


_STEPS: list[tuple[re.Pattern[str], StartupStep]] = [
    (re.compile(re.escape(SERVER_ARGS)), StartupStep.ARGS),
    (re.compile(r"Load weight (?:begin|end)"), StartupStep.LOAD_WEIGHTS),
    (re.compile(f"{KV_ALLOCATED}|Memory pool end"), StartupStep.KV_CACHE),
    (re.compile(r"Capture .*(?:CUDA|cuda) graph (?:begin|end)"), StartupStep.CUDA_GRAPHS),
    (re.compile(f"{HTTP_UP}|Application startup complete"), StartupStep.HTTP),
    (re.compile(f"\"GET {MODEL_INFO}|\"POST {GENERATE}|{PREFILL_BATCH}"), StartupStep.WARMUP),
    (re.compile(re.escape(READY_LINE)), StartupStep.READY),
]

_ORDER = list(StartupStep)


def step_of(line: str) -> StartupStep | None:
    for pattern, step in _STEPS:
        if pattern.search(line):
            return step
    return None


def step_fraction(step: StartupStep) -> float:
    return _ORDER.index(step) / (len(_ORDER) - 1)


@dataclass(frozen=True)
class FailureSignature:
    kind: str
    pattern: re.Pattern[str]
    reason: str


FAILURES: list[FailureSignature] = [
    FailureSignature(
        "argparse",
        re.compile(r"^(?:usage: .*|.*: error: .*)$"),
        "the server rejected its command line",
    ),
    FailureSignature(
        "port-in-use",
        re.compile(r"address already in use|Errno 98|port .* (?:is )?(?:already )?in use", re.I),
        "the port is already in use",
    ),
    FailureSignature(
        "oom",
        re.compile(r"out of memory|OutOfMemoryError|CUDA error: out of memory|not enough memory",
                   re.I),
        "out of GPU memory",
    ),
    FailureSignature(
        "nan",
        re.compile(r"\bNaN\b|nan detected|contains nan", re.I),
        "NaN in the model's output",
    ),
    FailureSignature(
        "cuda-graph",
        re.compile(r"Capture cuda graph failed"),
        "CUDA graph capture failed",
    ),
    FailureSignature(
        "exception",
        re.compile(r"Scheduler hit an exception|TokenizerManager hit an exception|"
                   r"Initialization failed|Traceback \(most recent call last\)"),
        "the server raised an exception during startup",
    ),
]


@dataclass(frozen=True)
class FailureDiagnosis:
    kind: str
    reason: str
    lines: tuple[str, ...]


def diagnose(lines: list[str], *, context: int = 12) -> FailureDiagnosis:
    """The most specific known failure in `lines` and the lines around its first sign."""
    for signature in FAILURES:
        for index, line in enumerate(lines):
            if signature.pattern.search(line):
                if signature.kind == "argparse":
                    # usage + error lines are at the end: show the error line(s) themselves.
                    errors = [ln for ln in lines if ": error:" in ln]
                    if not errors:
                        continue
                    return FailureDiagnosis(signature.kind, signature.reason, tuple(errors[-3:]))
                start = max(0, index - 2)
                return FailureDiagnosis(
                    signature.kind, signature.reason, tuple(lines[start : start + context])
                )
    return FailureDiagnosis("exited", "the server exited during startup", tuple(lines[-context:]))
