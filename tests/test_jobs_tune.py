"""`plateau tune`'s job on the simulator's virtual clock (tests/support/virtual_bench.py): the
demo's reference profile tuned end to end, a crashing candidate reverted, a change that does
not help rejected, a tuner killed with SIGKILL resumed to the same ladder. Real parts: the
sim's Runner and Engine, the diagnosis of stored evidence, the validation against the sim's
`--help`, the verdict, SQLite. Nothing asserted depends on this machine's speed: every time is
the virtual clock's, and every launch is seeded by its place in the tune."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from console.bench.models import StepResult
from console.config_models import ServerProfile, SweepPreset
from console.diagnose.models import Cause, Diagnosis, Suggestion
from console.jobs.tune import TuneError, kept_by, load_state, tuned_profile
from console.jobs.tune_bench import CandidateFailed, SweepOutcome
from console.jobs.tune_models import TuneState, ladder_rows
from console.jobs.tune_plan import candidates
from console.store.db import RunStore
from tests.support.virtual_bench import VirtualBench
from tests.support.virtual_tune import reference_profile, tune

ROOT = Path(__file__).resolve().parents[1]


def _kept(state: TuneState) -> list[str]:
    return [r.cause for r in state.ladder if r.outcome == "kept"]


def test_tune_fixes_the_demo_plateau_one_verdict_at_a_time(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "h.sqlite")
    state, tune_id, bench = tune(store, tmp_path)
    assert state.status == "done", state.stop_reason
    # the reference story's two causes, in the diagnosis's order, each kept on a real verdict
    assert _kept(state) == ["cuda-graph-ceiling", "tp-allreduce-pcie"], state.ladder
    for rung in state.ladder:
        assert rung.outcome == "kept" and rung.delta_pct is not None
        assert rung.half_width_pct is not None and rung.delta_pct - rung.half_width_pct > 0
        assert rung.levels == [128] and "at 128: real" in rung.sentence
        assert rung.run_a is not None and store.pair_of(rung.run_b or 0) is not None
    assert state.value[128] > 1.8 * state.start_value[128]  # ~820 -> ~2200 total tok/s
    assert state.ladder[-1].cumulative_pct > 80
    # restarts: the baseline; the first A/B (A already running) B, A, B; the second reuses
    # the first's B side (the profile it kept, two launches) as its A side: B, B
    assert [r.restarts for r in state.ladder] == [4, 6] and state.restarts == 6
    first, second = state.ladder
    assert first.reused_a is None and second.reused_a == first.run_b == second.run_a
    assert not first.resumed and not second.resumed
    profile = tuned_profile(state)
    assert profile.flags["cuda-graph-max-bs-decode"] == 128
    assert "NCCL_P2P_DISABLE" not in profile.env
    assert "sim-state-file" not in profile.flags and "sim-seed" not in profile.flags
    assert load_state(store, tune_id or 0) == state  # what --report prints
    # the kept candidate's last pass launched it: it keeps running as the good profile
    assert bench.launches[-1] == ("cutlass-moe+tp-allreduce-pcie", "2:3")
    assert len(bench.launches) == state.restarts


def test_a_crashing_candidate_is_reverted_and_a_larger_value_tried(tmp_path: Path) -> None:
    """The implied graph ceiling (128) NaNs mid-decode on this 'build'; the tuner records why,
    restarts the last good profile, and tries the larger value."""
    store = RunStore(tmp_path / "h.sqlite")
    bench = VirtualBench(store, tmp_path)
    start = reference_profile(tmp_path, **{"sim-nan-when": "cuda-graph-max-bs-decode=128",
                                           "sim-nan-after-steps": 5})
    from console.jobs.tune import new_state
    from tests.support.virtual_tune import request

    state, _id, bench = tune(store, tmp_path, bench, new_state(request(), start))
    first = state.ladder[0]
    assert (first.cause, first.outcome) == ("cuda-graph-ceiling", "failed")
    assert "NaN" in first.reason and first.change == "--cuda-graph-max-bs-decode 128"
    # right after the candidate's launch, the last good profile was launched again
    names = [name for name, _launch in bench.launches]
    crashed = names.index("cutlass-moe+cuda-graph-ceiling")
    assert names[crashed + 1] == "cutlass-moe" and bench.launches[crashed + 1][1] == "1:revert"
    second = state.ladder[1]
    assert second.change == "--cuda-graph-max-bs-decode 256" and second.outcome == "kept"
    assert tuned_profile(state).flags["cuda-graph-max-bs-decode"] == 256


def test_a_kept_step_that_crashes_in_its_confirmation_sweep_is_undone(tmp_path: Path) -> None:
    """The graph ceiling of 128 NaNs after 150 decode steps: later than each short A/B pass
    at 128 (a fresh launch each), within the kept profile's full confirmation sweep. The keep
    is undone, the last profile that ran through a whole sweep runs again, and the tune goes
    on from it (before: TuneError with the crashed server left as the host's only one)."""
    from console.jobs.tune import new_state
    from tests.support.virtual_tune import request

    store = RunStore(tmp_path / "h.sqlite")
    start = reference_profile(tmp_path, **{"sim-nan-when": "cuda-graph-max-bs-decode=128",
                                           "sim-nan-after-steps": 150})
    state, _id, bench = tune(store, tmp_path, VirtualBench(store, tmp_path),
                             new_state(request(), start))
    first = state.ladder[0]
    assert (first.change, first.outcome) == ("--cuda-graph-max-bs-decode 128", "failed")
    assert first.delta_pct is not None and first.delta_pct > 0  # its A/B had said better
    assert "then failed its confirmation sweep" in first.reason and "NaN" in first.reason
    assert first.cumulative_pct == 0
    # the crash was in the confirmation sweep; the start profile was launched right after
    assert bench.launches[4] == ("cutlass-moe", "1:undo")
    assert any("reverted to cutlass-moe, the last profile that ran through a whole sweep" in n
               for n in state.notes)
    assert state.status == "done", state.stop_reason
    assert [r.outcome for r in state.ladder[1:]] == ["kept", "kept"]
    assert tuned_profile(state).flags["cuda-graph-max-bs-decode"] == 256
    assert load_state(store, _id or 0) == state


class _FlakyAfterKeep(VirtualBench):
    """The kept profile's confirmation sweep fails, and so does the first launch back to the
    profile before it: the tune fails, but a launch of the last profile that ran through a
    whole sweep is tried once more, so the host is not left without a server."""

    async def restart(self, name: str, profile: ServerProfile, launch: str) -> None:
        if launch == "1:undo":
            self.launches.append((name, launch))
            raise CandidateFailed("did not start: (a flaky start)")
        await super().restart(name, profile, launch)

    async def sweep(self, name: str, profile: ServerProfile, spec: SweepPreset, *,
                    label: str, run_id: int | None, repeat_base: int,
                    finish: bool) -> SweepOutcome:
        if "after step 1" in label:
            raise CandidateFailed("crashed during the sweep: (late)")
        return await super().sweep(name, profile, spec, label=label, run_id=run_id,
                                   repeat_base=repeat_base, finish=finish)


def test_a_failure_after_a_keep_never_leaves_the_host_without_a_server(
    tmp_path: Path
) -> None:
    store = RunStore(tmp_path / "h.sqlite")
    bench = _FlakyAfterKeep(store, tmp_path)
    with pytest.raises(TuneError, match="did not start"):
        tune(store, tmp_path, bench)
    assert bench.launches[-2:] == [("cutlass-moe", "1:undo"), ("cutlass-moe", "recover")]
    state = load_state(store, 1)
    assert state.status == "failed"
    assert state.stop_reason.endswith("cutlass-moe, the last profile that ran through a whole "
                                      "sweep, runs again")


class _NoopSuggestion(VirtualBench):
    """The diagnosis names one cause whose suggestion the simulator does not model (a random
    seed): an A/A in all but name."""

    def diagnose(self, run_id: int | None, steps: Sequence[StepResult]) -> Diagnosis:
        real = super().diagnose(run_id, steps)
        fake = Cause(id="cuda-graph-ceiling", title="(a change that does nothing)",
                     confidence=0.3, evidence=[], suggest=Suggestion(
                         flags={"random-seed": 7}, gain_pct=40.0, at_concurrency=128))
        return real.model_copy(update={"causes": [fake]})


def test_a_suggestion_that_does_not_help_is_rejected(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "h.sqlite")
    bench: VirtualBench = _NoopSuggestion(store, tmp_path)
    state, _id, bench = tune(store, tmp_path, bench)
    # the seed as given, then "a larger value" of it: both judged, neither kept
    assert [r.change for r in state.ladder] == ["--random-seed 7", "--random-seed 14"]
    for rung in state.ladder:
        assert rung.outcome == "rejected" and rung.delta_pct is not None
        assert rung.half_width_pct is not None
        assert abs(rung.delta_pct) <= rung.half_width_pct  # the interval crosses zero
        assert "crosses zero" in rung.reason and "within noise" in rung.sentence
    assert state.kept.flags == {} and state.kept.env == {} and state.gain_pct == 0
    assert bench.launches[-1] == ("cutlass-moe", "2:revert")  # the last good one runs
    assert state.status == "done" and "judged" in state.stop_reason


def test_kill_9_mid_tune_then_resume_gives_the_same_ladder(tmp_path: Path) -> None:
    whole = RunStore(tmp_path / "whole.sqlite")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    uninterrupted, _id, _bench = tune(whole, tmp_path / "a")
    db = tmp_path / "killed.sqlite"
    # the tuner process blocks at step 2's first candidate restart (after step 1 was stored)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.virtual_tune", str(db), str(tmp_path / "b"),
         "--hang-at", "2:1"], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    marker = tmp_path / "b" / "hung"
    try:
        deadline = time.monotonic() + 170
        while not marker.exists():
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline, "the tuner never reached step 2"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    store = RunStore(db)
    tune_id = store.latest_tune("virtual", unfinished=True)
    assert tune_id is not None
    killed = load_state(store, tune_id)
    assert killed.status == "running" and [r.step for r in killed.ladder] == [1]
    # the launch the kill interrupted was spent: stored before it began, so the resumed
    # tune's budget counts it (issue 41, Low: it was lost with the A/B in flight)
    assert killed.restarts == uninterrupted.ladder[0].restarts + 1 == 5
    resumed, same_id, _bench = tune(store, tmp_path / "b", state=killed, tune_id=tune_id)
    assert same_id == tune_id and resumed.resumed == 1 and resumed.status == "done"
    assert len(resumed.ladder) == len(uninterrupted.ladder) == 2
    assert all(a.same_as(b) for a, b in zip(resumed.ladder, uninterrupted.ladder, strict=True))
    assert resumed.kept == uninterrupted.kept
    assert resumed.restarts == uninterrupted.restarts + 1  # the killed launch, then B, B
    # the ladder says which step's A/B was interrupted and ran again
    assert [r.resumed for r in resumed.ladder] == [False, True]
    assert not any(r.resumed for r in uninterrupted.ladder)
    assert ladder_rows(resumed)[2][4] == "kept (resumed)" and resumed.in_flight is None


def test_the_plan_tries_the_implied_value_then_a_larger_one_then_the_next_cause() -> None:
    from console.config_models import ServerProfile

    profile = ServerProfile(launch=["x"], model_path="m", port=1,
                            flags={"cuda-graph-max-bs-decode": 64})
    graph = Cause(id="cuda-graph-ceiling", title="", confidence=0.35, evidence=[],
                  suggest=Suggestion(flags={"cuda-graph-max-bs-decode": 128}, at_concurrency=128))
    kv = Cause(id="kv-cache-full", title="", confidence=0.2, evidence=[],
               suggest=Suggestion(flags={"mem-fraction-static": 0.9}, at_concurrency=64))
    power = Cause(id="power-cap", title="", confidence=0.5, evidence=[],
                  suggest=Suggestion(host="raise the power limit"))
    diagnosis = Diagnosis.model_validate({"knee": {"kind": "saturates"},
                                          "causes": [power, graph, kv]})
    found = candidates(diagnosis, profile, [32, 64, 128])
    assert [c.change.text() for c in found] == [
        "--cuda-graph-max-bs-decode 128", "--cuda-graph-max-bs-decode 256",
        "--cuda-graph-max-bs-decode 128, --mem-fraction-static 0.9"]
    assert found[0].levels == [128] and "KV pool" in found[0].interacts[0]
    rest = candidates(diagnosis, profile, [32, 64, 128], [c.change.key() for c in found])
    assert [c.cause for c in rest][:1] == ["kv-cache-full"] and rest[0].levels == [64]


def test_keep_rule_needs_the_interval_above_zero() -> None:
    from console.bench.verdict import Verdict, judge_point

    def verdict(delta: float, half: float) -> Verdict:
        point = judge_point(128, [100.0, 101.0], [100.0 + delta, 101.0 + delta])
        return Verdict(label_a="a", label_b="b", points=[point], knee_range=[128],
                       knee_delta_pct=delta, knee_half_width_pct=half, sentence="s")

    assert kept_by(verdict(10.0, 4.0))[0]
    assert not kept_by(verdict(3.0, 4.0))[0] and "crosses zero" in kept_by(verdict(3.0, 4.0))[1]
    assert not kept_by(verdict(-10.0, 4.0))[0]
    # A non-finite figure is no verdict: a NaN compares False both ways and read as a gain.
    for delta, half in ((math.nan, 4.0), (10.0, math.nan), (math.inf, 4.0)):
        kept, why = kept_by(verdict(delta, half))
        assert not kept and why.startswith("no verdict")


def test_the_budget_counts_what_the_readme_says_an_ab_costs(tmp_path: Path) -> None:
    # README: after a kept step the next A/B "costs 2 restarts, not 3"; the budget also keeps
    # the restart of the last good profile should that A/B not be kept, and says so.
    readme = (ROOT / "README.md").read_text()
    assert "so it costs 2 restarts, not 3" in readme
    assert "a restart budget keeps one more for the revert" in readme
    (tmp_path / "6").mkdir()
    (tmp_path / "7").mkdir()
    short, _id, _bench = tune(RunStore(tmp_path / "6.sqlite"), tmp_path / "6",
                              budget_restarts=6)
    # the baseline, then step 1's B, A, B: 4; step 2 would need 2 launches + the revert
    assert [r.restarts for r in short.ladder] == [4] and short.restarts == 4
    assert short.stop_reason == (
        "budget spent: 4 of 6 restarts used, the next A/B needs 3 (2 launches of the "
        "candidate, its A side being step 1's B side, and 1 to restart the last good profile "
        "should it not be kept)")
    enough, _id, bench = tune(RunStore(tmp_path / "7.sqlite"), tmp_path / "7",
                              budget_restarts=7)
    # kept, step 2's A/B cost its 2 launches: 6 restarts in all, one of the 7 unspent
    assert [r.restarts for r in enough.ladder] == [4, 6] and enough.restarts == 6
    assert [r.outcome for r in enough.ladder] == ["kept", "kept"]
    assert len(bench.launches) == 6
