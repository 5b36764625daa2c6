"""`plateau gpus --local` through the real command code (collector, LocalTransport, agent),
without the rest of the CLI's imports (the device machine has no Textual):

    python3 tests/bench/gpu_plateau_gpus.py [--once | --count N --json]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from console.commands.gpus import run


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--once", action="store_true")
    ap.add_argument("--count", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--interval", type=float, default=1.0)
    ns = ap.parse_args()
    args = argparse.Namespace(host=None, demo=False, local=True, once=ns.once, count=ns.count,
                              json=ns.json, interval=ns.interval, backend=None, no_pcie=False,
                              sim_gpus=None, sim_state=None)
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
