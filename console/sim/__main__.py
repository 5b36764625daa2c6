"""`python -m console.sim <sglang launch_server flags> [--sim-* flags]`."""

from __future__ import annotations

import asyncio
import os
import sys

from console.sim.args import parse
from console.sim.config import SimConfig, resolve
from console.sim.procs import ProcGroup
from console.sim.runner import amain, child_main
from console.sim.speculative import UnmodelledAlgorithm


def main(argv: list[str] | None = None) -> int:
    args, sim, sglang_argv = parse(list(sys.argv[1:] if argv is None else argv))
    try:
        cfg = resolve(args, sim, sglang_argv)
    except UnmodelledAlgorithm as exc:  # one line, as the parser's own errors, exit 2
        print(f"error: {exc}", file=sys.stderr)
        return 2
    procs = ProcGroup(sim.ideal_procs) if sim.ideal_procs > 1 else None
    if procs is not None and procs.fork_children():
        _run_child(cfg, procs)
    try:
        return asyncio.run(amain(cfg, procs))
    except KeyboardInterrupt:
        return 0


def _run_child(cfg: SimConfig, procs: ProcGroup) -> None:
    """A `--sim-ideal-procs` child: wait for the parent to be up, serve, never return."""
    code = 0
    try:
        if procs.wait_go():
            code = asyncio.run(child_main(cfg, procs))
    except KeyboardInterrupt:
        pass
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)  # not the parent's cleanup: it owns the temp dir and the GPU state file


if __name__ == "__main__":
    raise SystemExit(main())
