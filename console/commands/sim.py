"""`plateau sim [SGLANG FLAGS...] [--sim-* FLAGS]`: run the simulated SGLang server here.

`plateau sim --help` leads with what is the sim's own (the common SGLang flags it models and
its --sim-* options) and points to the full list; `plateau sim --sglang-help` prints that list
as `sglang serve --help` would. `python -m console.sim --help` stays SGLang's own help: the
flags editor reads a host's flags from its server's `--help`, the simulator's included.
"""

from __future__ import annotations

import argparse
from typing import Any

from console.sglang import endpoints
from console.sglang.batch import DECODE_BATCH

_HELP_FLAGS = ("-h", "--help")
SGLANG_HELP = "--sglang-help"

# The SGLang flags the simulator's performance model and logs react to (console.sim.config).
_MODELLED = (
    ("--model-path PATH", f"model name reported by /v1/models and {endpoints.SERVER_INFO}"),
    ("--port PORT / --host HOST", "where to listen (loopback by default)"),
    ("--tp-size N", "tensor parallel ranks: per-rank log lines, GPU split"),
    ("--quantization, --kv-cache-dtype", "change memory use and speed"),
    ("--moe-runner-backend, --attention-backend", "change the speed curve"),
    ("--mem-fraction-static F", "size of the KV cache pool"),
    ("--max-running-requests N", "batch limit (the plateau)"),
    ("--cuda-graph-max-bs-decode N", "above it, decode runs without CUDA graphs"),
    ("--enable-metrics", "serve Prometheus /metrics"),
    ("--decode-log-interval N", f"a {DECODE_BATCH} line every N decode steps"),
    ("--api-key KEY", "require the key like SGLang does"),
)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "sim",
        help="run a simulated SGLang 0.5.23 server (no GPU needed)",
        description="Accepts `sglang serve` flags plus --sim-* options; `plateau sim --help` "
        "lists the ones that matter, `plateau sim --sglang-help` all of SGLang's. Logs go to "
        "stdout/stderr like SGLang.",
        add_help=False,
        # No option prefix here: every argument (flags included) is handed to the sim's own
        # SGLang-compatible parser untouched.
        prefix_chars="\0",
    )
    parser.add_argument("args", nargs=argparse.REMAINDER)
    parser.set_defaults(handler=_run)


def sim_help() -> str:
    """The sim's own help: usage, the modelled SGLang flags, --sim-* options, the pointer."""
    from console.sim.args import build_sim_parser, option_rows

    sim_parser = build_sim_parser()
    sim_parser.prog = "plateau sim"
    sim_parser.usage = "plateau sim [SGLANG FLAGS...] [--sim-* OPTIONS]"
    sim_parser.description = (
        "Run a simulated SGLang 0.5.23 server here: the same HTTP API, log lines and "
        "/metrics as `sglang serve`, a continuous-batching performance model, simulated GPUs. "
        "Every SGLang flag is accepted and validated like SGLang's parser does."
    )
    width = max(len(flag) for flag, _ in _MODELLED) + 2
    modelled = "\n".join(f"  {flag:<{width}}{what}" for flag, what in _MODELLED)
    sim_parser.epilog = None
    text = sim_parser.format_help().replace("options:\n", "simulator options (--sim-*):\n", 1)
    return (
        f"{text}\nSGLang flags the simulation reacts to:\n{modelled}\n\n"
        f"All {len(option_rows())} SGLang 0.5.23 flags: plateau sim {SGLANG_HELP}\n"
        "Example: plateau sim --model-path demo/model --tp-size 8 --port 30000 --sim-seed 1\n"
    )


def _run(args: argparse.Namespace) -> int:
    argv = list(args.args)
    if any(a in _HELP_FLAGS for a in argv):
        print(sim_help(), end="")
        return 0
    argv = ["--help" if a == SGLANG_HELP else a for a in argv]
    from console.sim.__main__ import main

    return main(argv)
