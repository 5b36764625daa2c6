"""Tunes of the demo's reference profile on the virtual bench, for tests and the grid benchmark;
run as a script (`python -m tests.support.virtual_tune DB TMP [--hang-at LAUNCH]`) it is the
tuner process a test kills with SIGKILL mid-tune: at the launch named by --hang-at it writes
TMP/hung and blocks, so the kill lands inside an A/B after the earlier ones were stored.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from console.config_models import ServerProfile, SweepPreset
from console.demo import demo_config
from console.jobs.tune import new_state, run_tune
from console.jobs.tune_models import TuneRequest, TuneState
from console.store.db import RunStore
from tests.support.virtual_bench import VirtualBench, run_virtual

# The demo's reference workload, shortened: 256 in / 64 out, one wave, up to 128 (the decode
# batch passes the graph ceiling of 64 there, as in the reference story).
SPEC = SweepPreset(concurrency=[32, 64, 128], input_len=256, output_len=64,
                   prompts_per_concurrency=1, repeats=1, flush_cache=False)


def reference_profile(tmp: Path, **flags: Any) -> ServerProfile:
    """The demo's reference profile (cutlass MoE, graphs to 64, NCCL_P2P_DISABLE=1)."""
    profile = demo_config(tmp, port=30000).profiles["cutlass-moe"]
    merged = {**profile.flags, **flags}
    return profile.model_copy(update={"flags": {k: v for k, v in merged.items()
                                                if v is not None}})


def request(spec: SweepPreset = SPEC, **kw: Any) -> TuneRequest:
    return TuneRequest(host="virtual", profile="cutlass-moe", spec=spec, **kw)


class HangingBench(VirtualBench):
    def __init__(self, *args: Any, hang_at: str, marker: Path, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.hang_at, self.marker = hang_at, marker

    async def restart(self, name: str, profile: ServerProfile, launch: str) -> None:
        if launch == self.hang_at:
            self.marker.write_text(launch)
            time.sleep(3600)  # blocks the process (the virtual loop too) until it is killed
        await super().restart(name, profile, launch)


def tune(store: RunStore, tmp: Path, bench: VirtualBench | None = None,
         state: TuneState | None = None, tune_id: int | None = None,
         **kw: Any) -> tuple[TuneState, int | None, VirtualBench]:
    bench = bench or VirtualBench(store, tmp)
    state = state or new_state(request(**kw), reference_profile(tmp))

    async def go() -> tuple[TuneState, int | None]:
        try:
            return await run_tune(bench, state, store=store, tune_id=tune_id)
        finally:
            await bench.close()

    final, tid = run_virtual(go())
    return final, tid, bench


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("db")
    p.add_argument("tmp")
    p.add_argument("--hang-at", default="")
    args = p.parse_args()
    tmp = Path(args.tmp)
    store = RunStore(args.db)
    bench = HangingBench(store, tmp, hang_at=args.hang_at, marker=tmp / "hung")
    tune(store, tmp, bench)


if __name__ == "__main__":
    main()
