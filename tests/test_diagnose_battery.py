"""The diagnosis judged on a battery of scenarios: a healthy TP8 base on the simulator and
one operator change each (tests/support/scenarios.py says which and why). Per scenario: the
top cause (or, where the mechanism costs little on this base, the top candidate with no clear
cause), no phantom cause on the healthy base, and for several the A/B of the suggested change:
B = the scenario plus the diagnosis's own suggestion, its throughput moving the predicted way.

Every sweep runs the simulator's real Runner, Engine and log lines on a virtual clock
(tests/support/virtual_sweep.py): the whole battery is CPU time only (~30 s), and nothing
asserted depends on this machine's speed.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest

from console.config_models import SweepPreset
from console.diagnose.diagnose import diagnosis_lines
from console.diagnose.effects import CLEAR_EFFECT
from console.diagnose.models import Cause
from tests.support.agree import agrees
from tests.support.scenarios import BASE_SPEC, SCENARIOS, Scenario
from tests.support.virtual_sweep import Client, VirtualRun, virtual_sweep

BY_NAME = {s.name: s for s in SCENARIOS}


@cache
def _run(name: str, tmp: str) -> VirtualRun:
    scenario = BY_NAME[name]
    spec = SweepPreset(**{**BASE_SPEC, **scenario.spec})
    return virtual_sweep(scenario.all_flags(), spec, tmp=Path(tmp), env=scenario.env,
                         client=scenario.client)


@pytest.fixture(scope="module")
def tmp_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("battery"))


def _apply(scenario: Scenario, cause: Cause) -> tuple[dict[str, Any], dict[str, str],
                                                     Client | None]:
    """B: the scenario with the cause's suggestion applied (flags, env, client workers; a
    host change is applied as the simulator's board setting it names)."""
    flags = {**scenario.all_flags(), **cause.suggest.flags}
    env = {k: v for k, v in {**scenario.env, **cause.suggest.env}.items() if v is not None}
    client = scenario.client
    if "workers" in cause.suggest.sweep and client is not None:
        client = Client(workers=int(cause.suggest.sweep["workers"]),
                        cpu_per_chunk_s=client.cpu_per_chunk_s)
    if cause.id == "power-cap":
        flags["sim-power-limit-w"] = 600  # nvidia-smi -pl back to the board's default
    return {k: v for k, v in flags.items() if v is not None}, env, client


@pytest.mark.parametrize("name", [s.name for s in SCENARIOS])
def test_scenario_top_cause(name: str, tmp_dir: str) -> None:
    scenario = BY_NAME[name]
    run = _run(name, tmp_dir)
    diagnosis = run.diagnosis
    print(name, [(c.id, c.confidence) for c in diagnosis.causes],
          [(c.id, c.confidence) for c in diagnosis.candidates])
    print("\n".join(diagnosis_lines(diagnosis)))
    assert all(c.confidence <= 0.99 for c in diagnosis.causes + diagnosis.candidates)
    if scenario.expected is None:
        assert diagnosis.causes == [], diagnosis.causes
        assert diagnosis_lines(diagnosis)[0].startswith("why: no clear cause")
        return
    if scenario.clear:
        assert diagnosis.causes and diagnosis.causes[0].id == scenario.expected
        assert diagnosis.causes[0].confidence >= CLEAR_EFFECT
    else:
        assert diagnosis.causes == []
        assert diagnosis.candidates and diagnosis.candidates[0].id == scenario.expected
    found = (diagnosis.causes or diagnosis.candidates)[0]
    assert found.evidence and found.suggest.at_concurrency in BASE_SPEC["concurrency"] + \
        scenario.spec.get("concurrency", [])


def test_healthy_base_has_no_cause(tmp_dir: str) -> None:
    diagnosis = _run("healthy", tmp_dir).diagnosis
    assert diagnosis.causes == []
    assert all(c.confidence < 0.5 for c in diagnosis.candidates)
    # The phantom of issue 24: the boards touch their power limit at full load, the clock
    # drops ~2%: below the run's noise, not reported at all.
    assert not any(c.id in ("power-cap", "thermal") for c in diagnosis.candidates)
    gpu = [g for s in _run("healthy", tmp_dir).evidence.steps for g in s.gpu]
    busy = [g for g in gpu if (g.util or 0) > 5]
    assert busy and all(g.sm_clock_mhz and g.sm_clock_max_mhz and
                        g.sm_clock_mhz > 0.95 * g.sm_clock_max_mhz for g in busy)


def test_gpu_telemetry_never_reads_idle_inside_a_busy_step(tmp_dir: str) -> None:
    """Decode steps of ~0.25 s and more (c=256 on the eager profile) against 0.25 s samples:
    every sample taken while the step's requests decode reads the GPU busy."""
    run = _run("no-cuda-graph", tmp_dir)
    step = run.evidence.steps[-1]
    inner = [g for g in step.gpu
             if step.started_at + 5 < g.t < step.finished_at - 5 and g.index == 0]
    assert len(inner) > 20
    assert min(g.util or 0 for g in inner) > 90, [g.util for g in inner][:40]


AB = ["graph-ceiling", "p2p-off-pcie", "running-cap", "moe-triton", "power-limit",
      "one-slow-worker", "no-cuda-graph"]


@pytest.mark.parametrize("name", AB)
def test_suggested_fix_moves_throughput_the_predicted_way(name: str, tmp_dir: str) -> None:
    scenario = BY_NAME[name]
    a = _run(name, tmp_dir)
    cause = a.diagnosis.causes[0]
    level = cause.suggest.at_concurrency
    assert level is not None and cause.suggest.gain_pct is not None and cause.suggest.gain_pct > 0
    flags, env, client = _apply(scenario, cause)
    spec = SweepPreset(**{**BASE_SPEC, **scenario.spec})
    b = virtual_sweep(flags, spec, tmp=Path(tmp_dir), env=env, client=client)
    measured = (b.total(level) / a.total(level) - 1) * 100
    print(f"{name}: {cause.id} predicted +{cause.suggest.gain_pct:.0f}% at c={level}, "
          f"measured {measured:+.0f}%")
    assert measured > 10, measured  # the direction, far beyond the sim's 2% step noise
    # Within 10 points of the prediction, or inside the bound or prior range it states.
    assert agrees(cause.suggest, measured), (cause.suggest, measured)
    assert not any(c.id == cause.id for c in b.diagnosis.causes), b.diagnosis.causes
