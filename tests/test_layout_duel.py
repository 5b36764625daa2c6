"""`plateau layout`'s duel on the simulator's virtual clock (tests/support/virtual_bench.py):
the demo's reference box (8 RTX PRO 6000 on PCIe, NCCL_P2P_DISABLE=1, a 1.5 TB-as-bf16 NVFP4
MoE at TP8) launched in its layouts, interleaved; the plan's refusals and shares as pure
functions."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.commands.layout import layout_lines
from console.config_models import SweepPreset
from console.jobs.layout import LayoutRequest, LayoutResult, layout_json, run_layout
from console.jobs.layout_plan import Facts, Shape, allreduce_share, fits, plan, shape_of
from console.store.db import RunStore
from tests.support.virtual_bench import VirtualBench, run_virtual
from tests.support.virtual_tune import reference_profile

SPEC = SweepPreset(concurrency=[16, 64], input_len=256, output_len=24,
                   prompts_per_concurrency=2, flush_cache=False)


def _duel(tmp: Path, store: RunStore, **flags: object) -> tuple[LayoutResult, VirtualBench]:
    bench = VirtualBench(store, tmp)
    profile = reference_profile(tmp, **{"sim-arch": "DeepseekV3ForCausalLM", **flags})
    request = LayoutRequest(host="virtual", profile="cutlass-moe", spec=SPEC, repeats=2)

    async def go() -> LayoutResult:
        try:
            return await run_layout(bench, request, profile, store=store)
        finally:
            await bench.close()

    return run_virtual(go()), bench


@pytest.mark.slow
def test_demo_box_names_attention_dp_with_an_interval(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.db")
    result, bench = _duel(tmp_path, store)
    by_kind = {o.layout.kind: o for o in result.outcomes}
    # DP2 x TP4 would hold 2 x 54.6 GB of weights per GPU: refused before any launch
    assert by_kind["dp"].fits is False and "does not fit" in by_kind["dp"].refused
    assert not any(name.endswith("@dp") for name, _launch in bench.launches)
    # interleaved: current, attention DP, current, attention DP, then the current left running
    assert [n for n, _ in bench.launches] == ["cutlass-moe", "cutlass-moe@attn-dp"] * 2 + [
        "cutlass-moe"]
    assert "custom-ar" in result.skipped and "NCCL" in result.skipped["custom-ar"]
    attn = by_kind["attn-dp"]
    assert result.best == "cutlass-moe@attn-dp"
    assert attn.verdict is not None and "±" in result.sentence and "better" in result.sentence
    # KV per replica from each launch's own sizing line: 8 attention groups, a pool each
    current = result.current
    assert current.kv_tokens_per_replica and attn.kv_tokens_per_replica
    assert attn.kv_tokens_per_replica < current.kv_tokens_per_replica / 4
    data = layout_json(result)
    shares = {row["kind"]: row["allreduce_share"] for row in data["layouts"]}
    assert shares["attn-dp"] < shares["current"] and shares["current"] > 0.3
    assert "all-reduces" in result.cause
    # stored: each challenger an A/B pair with the current layout, as `plateau compare` reads
    assert attn.pair_id is not None and current.run_id is not None and attn.run_id is not None
    pair = store.pair_of(attn.run_id)
    assert pair is not None and pair[0] == current.run_id
    assert store.get_run(attn.run_id).summary.meta.flags.get("attn-dp-size") == 8
    text = "\n".join(layout_lines(result))
    assert "TP8 attn-DP8" in text and f"{attn.kv_tokens_per_replica} x8" in text
    assert "verdict: TP8 attn-DP8 +" in text and "not run: DP2xTP4: does not fit" in text


def test_cli_refuses_an_unknown_layout(capsys: pytest.CaptureFixture[str]) -> None:
    from console.cli import main

    assert main(["layout", "--demo", "--layouts", "tp16"]) == 2
    assert "unknown layout tp16" in capsys.readouterr().err


def test_plan_says_why_a_llama_takes_no_attention_dp() -> None:
    profile = reference_profile(Path("/tmp"))
    facts = Facts(architecture="LlamaForCausalLM", version="0.5.23", nvlink=False)
    got = plan("p", profile, facts)
    assert [layout.kind for layout in got.layouts] == ["current", "dp"]
    assert "plain TP" in got.skipped["attn-dp"]
    # 0.5.18 has no --attn-dp-size: the older spelling
    old = plan("p", profile, Facts(architecture="Qwen3MoeForCausalLM", version="0.5.18"))
    attn = next(layout for layout in old.layouts if layout.kind == "attn-dp")
    assert attn.change.flags == {"enable-dp-attention": True, "dp-size": 8}
    assert shape_of(attn.profile.flags) == Shape(tp=8, dp=1, attn_dp=8)


def test_fit_and_shares_by_layout() -> None:
    now = Shape(tp=8)
    small = Facts(weights_gb_per_gpu=20.0, avail_gb=95.0, nvlink=False)
    dp2 = plan("p", reference_profile(Path("/tmp")), small).layouts[1]
    assert dp2.shape == Shape(tp=4, dp=2)
    assert fits(dp2, now, small, 0.85)[0] is True
    big = Facts(weights_gb_per_gpu=54.6, avail_gb=95.0)
    assert fits(dp2, now, big, 0.85)[0] is False
    assert fits(dp2, now, Facts(), 0.85)[0] is None
    # NCCL ring over PCIe: TP4's all-reduce has 6 hops to TP8's 14; NVLink: one-shot either way
    pcie = Facts(nvlink=False)
    assert allreduce_share(Shape(tp=4, dp=2), pcie, 100.0) == pytest.approx(
        allreduce_share(Shape(tp=8), pcie, 100.0) * 6 / 14)  # type: ignore[operator]
    nvl = Facts(nvlink=True)
    assert allreduce_share(Shape(tp=8), nvl, 100.0) == allreduce_share(Shape(tp=4, dp=2), nvl,
                                                                        100.0)


def test_probe_figures_reach_the_allreduce_diagnosis(tmp_path: Path) -> None:
    """With P2P on, a measured NCCL latency (the probe's) replaces the rule's priors in the
    stored evidence of the duel's runs; here a small model whose DP2 x TP4 fits and runs."""
    from console.diagnose.diagnose import diagnose_stored

    store = RunStore(tmp_path / "runs.db")
    bench = VirtualBench(store, tmp_path)
    profile = reference_profile(tmp_path, **{"cuda-graph-max-bs-decode": 128,
                                             "sim-weights-gb": 40.0})
    profile = profile.model_copy(update={"env": {}})
    spec = SweepPreset(concurrency=[32, 64, 128], input_len=256, output_len=64,
                       prompts_per_concurrency=3, flush_cache=False)
    request = LayoutRequest(host="virtual", profile="p", spec=spec, repeats=2,
                            kinds=("current", "dp"))

    async def go() -> LayoutResult:
        try:
            return await run_layout(bench, request, profile, store=store,
                                    measured_us={8: 250.0, 4: 90.0})
        finally:
            await bench.close()

    result = run_virtual(go())
    dp = result.outcomes[1]
    assert dp.layout.kind == "dp" and dp.fits is True and dp.verdict is not None
    assert dp.kv_tokens_per_replica is not None
    current = result.current
    assert current.run_id is not None
    evidence = store.load_evidence(current.run_id)
    assert evidence is not None and evidence.topology.allreduce_us == {8: 250.0, 4: 90.0}
    diagnosis = diagnose_stored(store, current.run_id, current.steps)
    cause = next(c for c in diagnosis.causes + diagnosis.candidates
                 if c.id == "tp-allreduce-pcie")
    said = " ".join(e.text for e in cause.evidence)
    assert "at 250 us (nccl)" in said and "measured on this host by the all-reduce probe" in said
    assert "measured by the all-reduce probe" in layout_json(result)["allreduce_source"]


def test_custom_allreduce_is_dueled_where_it_can_change_the_path() -> None:
    profile = reference_profile(Path("/tmp"))
    nvlink = plan("p", profile, Facts(nvlink=True, architecture="LlamaForCausalLM"))
    flip = next(layout for layout in nvlink.layouts if layout.kind == "custom-ar")
    assert flip.change.flags == {"disable-custom-all-reduce": True}
    assert flip.shape.custom_ar is False and "custom-ar" not in nvlink.skipped
    pcie = plan("p", profile, Facts(nvlink=False, architecture="LlamaForCausalLM"))
    assert "nothing to measure" in pcie.skipped["custom-ar"]
