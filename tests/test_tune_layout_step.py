"""`plateau tune` on the simulated PCIe box with P2P on and TP8 (issue 39): once
`tp-allreduce-pcie` leads with P2P and the custom all-reduce already on, the ladder's next step
is a layout, DP2 x TP4, A/B'd on real (simulated) launches of the two replicas."""

from __future__ import annotations

from pathlib import Path

from console.config_models import SweepPreset
from console.jobs.tune import new_state
from console.store.db import RunStore
from tests.support.virtual_tune import reference_profile, request, tune

# Two of each level so the sweep is not "too few prompts"; a 40 GB (bf16) model, whose
# weights stream fast enough that the all-reduces are a large share of the decode step.
SPEC = SweepPreset(concurrency=[32, 64, 128], input_len=256, output_len=64,
                   prompts_per_concurrency=3, repeats=1, flush_cache=False)


def test_tune_with_p2p_on_reaches_the_layout_step(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "h.sqlite")
    start = reference_profile(tmp_path, **{"cuda-graph-max-bs-decode": 128,
                                           "sim-weights-gb": 40.0})
    start = start.model_copy(update={"env": {}})  # P2P on: NCCL_P2P_DISABLE unset
    state, _id, bench = tune(store, tmp_path, state=new_state(
        request(spec=SPEC, budget_restarts=6), start))
    first = state.ladder[0]
    assert first.cause == "tp-allreduce-pcie", state.ladder
    assert first.applied.flags == {"tp-size": 4, "dp-size": 2}
    assert first.why.startswith("a layout change: DP2 x TP4")
    assert first.outcome in ("kept", "rejected") and first.delta_pct is not None
    # the B side ran as two replicas: its stored run says so
    assert first.run_b is not None
    assert store.get_run(first.run_b).summary.meta.flags.get("dp-size") == 2
    assert any(name.endswith("+tp-allreduce-pcie") for name, _launch in bench.launches)
