"""`python -m console.sim <sglang launch_server flags> [--sim-* flags]`."""

from __future__ import annotations

import asyncio
import sys

from console.sim.args import parse
from console.sim.config import resolve
from console.sim.runner import amain


def main(argv: list[str] | None = None) -> int:
    args, sim, sglang_argv = parse(list(sys.argv[1:] if argv is None else argv))
    cfg = resolve(args, sim, sglang_argv)
    try:
        return asyncio.run(amain(cfg))
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
