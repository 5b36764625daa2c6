"""`plateau sim [SGLANG FLAGS...] [--sim-* FLAGS]`: run the simulated SGLang server here."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "sim",
        help="run a simulated SGLang 0.5.23 server (no GPU needed)",
        description="Accepts `sglang serve` flags (see `plateau sim --help`) plus --sim-* "
        "options (see `plateau sim --sim-help`). Logs go to stdout/stderr like SGLang.",
        add_help=False,
        # No option prefix here: every argument (flags included) is handed to the sim's own
        # SGLang-compatible parser untouched; `plateau sim --help` shows SGLang's help.
        prefix_chars="\0",
    )
    parser.add_argument("args", nargs=argparse.REMAINDER)
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from console.sim.__main__ import main

    return main(list(args.args))
