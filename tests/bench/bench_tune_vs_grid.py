"""The tuner against a grid search over the same flag space, on the demo (issue 28's peer
comparison). Run: `PYTHONPATH=. .venv/bin/python tests/bench/bench_tune_vs_grid.py`.

Both run on the simulator's virtual clock with the same bench (tests/support/virtual_bench.py:
the same restart, the same sweep code, the same stored runs), so "minutes" are the simulated
host's wall time (sweeps plus SIM_PROCESS_S per restart, the demo simulator's), not this
machine's, and the CPU seconds are printed beside them.

The flag space is every flag the diagnosis can suggest for the demo's reference profile, at
2-3 values each: cuda-graph-max-bs-decode 64/128/256 (cuda-graph-ceiling), NCCL_P2P_DISABLE
1/unset (tp-allreduce-pcie), moe-runner-backend cutlass/triton (moe-untuned),
mem-fraction-static 0.85/0.9 (kv-cache-full, running-cap): 24 profiles, one restart and one
sweep each. The grid's best is the highest total tok/s at 128; the tuner "gets there" at the
first kept profile whose own sweep is within 2% of it.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from console.config_models import ServerProfile
from console.jobs.tune_models import Change, apply
from console.store.db import RunStore
from tests.support.virtual_bench import VirtualBench, run_virtual
from tests.support.virtual_tune import SPEC, reference_profile, tune

LEVEL = 128
SPACE: dict[str, list[Any]] = {
    "cuda-graph-max-bs-decode": [64, 128, 256],
    "NCCL_P2P_DISABLE": ["1", None],
    "moe-runner-backend": ["cutlass", "triton"],
    "mem-fraction-static": [0.85, 0.9],
}


def key(profile: ServerProfile) -> str:
    """The profile's place in the grid (the defaults where a flag is not set)."""
    return json.dumps([profile.flags.get("cuda-graph-max-bs-decode"),
                       profile.env.get("NCCL_P2P_DISABLE"),
                       profile.flags.get("moe-runner-backend"),
                       profile.flags.get("mem-fraction-static", 0.85)])


def grid(tmp: Path) -> dict[str, Any]:
    store = RunStore(tmp / "grid.sqlite")
    bench = VirtualBench(store, tmp)
    base = reference_profile(tmp)
    results: list[tuple[float, str]] = []
    by_key: dict[str, float] = {}

    async def go() -> float:
        t0 = asyncio.get_running_loop().time()
        for n, values in enumerate(itertools.product(*SPACE.values())):
            chosen = dict(zip(SPACE, values, strict=True))
            env = {"NCCL_P2P_DISABLE": chosen.pop("NCCL_P2P_DISABLE")}
            profile = apply(base, Change(flags=chosen, env=env))
            await bench.restart(f"grid{n}", profile, f"grid:{n}")
            out = await bench.sweep(f"grid{n}", profile, SPEC, label=f"grid {n}", run_id=None,
                                    repeat_base=0, finish=True)
            step = next(s for s in out.steps if s.concurrency == LEVEL)
            assert step.metrics is not None
            results.append((step.metrics.headline_total_tok_s(), Change(
                flags=chosen, env=env).text()))
            by_key[key(profile)] = step.metrics.headline_total_tok_s()
        await bench.close()
        return (asyncio.get_running_loop().time() - t0) / 60

    cpu = time.process_time()
    minutes = run_virtual(go())
    best, where = max(results)
    return {"restarts": len(results), "minutes": round(minutes, 1), "best": round(best, 1),
            "best_profile": where, "cpu_s": round(time.process_time() - cpu, 1),
            "start": round(results[0][0], 1),
            "by_key": by_key,
            "top": [(round(v, 1), w) for v, w in sorted(results, reverse=True)[:6]]}


def tuner(tmp: Path, best: float, by_key: dict[str, float]) -> dict[str, Any]:
    store = RunStore(tmp / "tune.sqlite")
    cpu = time.process_time()
    state, _id, _bench = tune(store, tmp)
    reached: dict[str, Any] | None = None
    # the kept profiles' own sweeps: the start, then one after each kept step
    runs = [r for r in store.list_runs(1000) if r.meta.label.startswith("tune: ")]
    for run in sorted(runs, key=lambda r: r.id):
        value = next(s.metrics.headline_total_tok_s() for s in store.get_run(run.id).steps
                     if s.concurrency == LEVEL and s.metrics is not None)
        if reached is None and value >= 0.98 * best:
            step = sum(1 for r in state.ladder if r.run_b is not None and r.run_b < run.id)
            rung = state.ladder[step - 1] if step else None
            reached = {"value": round(value, 1), "after_step": step,
                       "restarts": rung.restarts if rung else 1,
                       "minutes": rung.minutes if rung else None}
    # the same question asked of the grid's own sweep of each kept profile (one launch each,
    # the same code and noise): a single sweep of either is ~2 % noisy at this workload
    kept = [r for r in state.ladder if r.outcome == "kept"]
    profiles = [(0, 1, state.start)]
    so_far = Change()
    for r in kept:
        so_far = so_far.merged(r.applied)
        profiles.append((r.step, r.restarts, apply(state.start, so_far)))
    reached_in_grid = next(({"after_step": step, "restarts": restarts,
                             "value_in_grid": round(by_key[key(p)], 1)}
                            for step, restarts, p in profiles
                            if by_key.get(key(p), 0.0) >= 0.98 * best), None)
    return {"ladder": [{k: getattr(r, k) for k in ("step", "cause", "change", "outcome",
                                                   "delta_pct", "half_width_pct",
                                                   "cumulative_pct", "restarts", "minutes")}
                       for r in state.ladder],
            "restarts": state.restarts, "minutes": state.minutes,
            "final": round(state.value[LEVEL], 1), "start": round(state.start_value[LEVEL], 1),
            "reached_2pct": reached,
            "reached_2pct_in_grid": reached_in_grid,
            # the tuner's final profile as the grid's own sweep measured it (same code)
            "final_in_grid": round(by_key[key(state.good_profile())], 1),
            "final_in_grid_vs_best_pct": round(
                (by_key[key(state.good_profile())] / best - 1) * 100, 2),
            "cpu_s": round(time.process_time() - cpu, 1),
            "stop_reason": state.stop_reason}


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        (tmp / "g").mkdir()
        (tmp / "t").mkdir()
        g = grid(tmp / "g")
        t = tuner(tmp / "t", g["best"], g.pop("by_key"))
    print(json.dumps({"grid": g, "tune": t}, indent=1))


if __name__ == "__main__":
    main()
