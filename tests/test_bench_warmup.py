"""Warm-up after a restart (issue 40): the log's warm-up signs, where latency converges, and a
sweep started right after a restart that leaves the warm-up out of its steady figures.

The sweeps run the simulator with `--sim-warmup` on its virtual clock
(tests/support/virtual_bench.py): the sim's own runtime JIT stalls and slow first steps, every
time the simulated GPU's, so the 2 % comparison does not depend on this machine's speed."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest

from console.bench.abplan import estimate
from console.bench.engines import NativeEngine
from console.bench.metrics import Chunks, RequestRecord
from console.bench.models import SteadyState, StepMetrics, StepResult, Warmup
from console.bench.sweep import run_sweep
from console.bench.warmup import detect, log_signs, steady_after_warmup, with_log_signs
from console.config_models import ServerProfile, SweepPreset, WarmupLoad
from console.diagnose.recorder import EvidenceRecorder
from console.diagnose.sources import EvidenceSources, LocalLog
from console.sglang.warmup import deepgemm_jit_line, warmup_sign
from console.store.db import RunStore
from tests.support.ab_sim import LIGHT
from tests.support.sim_fixtures import SimFactory
from tests.support.virtual_bench import VirtualBench, run_virtual

REAL_LOG = Path(__file__).parent / "data/logs/real/club3090-2x5090-new-capture-prefill.log"
MS = 1_000_000


def test_warmup_signs_in_real_and_simulated_lines() -> None:
    lines = REAL_LOG.read_text(encoding="utf-8", errors="replace").splitlines()
    signs = log_signs(lines)
    # the real 2x5090 startup: FlashInfer's autotuner bars and its "completed" per rank
    assert signs.get("flashinfer-autotune", 0) >= 8, signs
    assert signs.get("graph-capture", 0) >= 2, signs
    assert warmup_sign(deepgemm_jit_line("GEMM_NT_F8F8BF16", 576, 7168, 1)) == "deepgemm-jit"
    assert warmup_sign("Compiling a graph for shape 64 takes 3.20 s") == "torch-compile"
    batch = ("[2026-09-12 00:25:10 TP0] Decode batch, #running-req: 8, #token: 900, "
             "token usage: 0.01, cuda graph: True, gen throughput (token/s): 410.2, #queue-req: 0")
    assert warmup_sign(batch) is None


def _closed_loop(paces_ms: list[float], concurrency: int, tokens: int = 64
                 ) -> list[RequestRecord]:
    """Requests in `concurrency` closed-loop streams, the i-th decoding at `paces_ms[i]` per
    token (prefill 50 ms), each stream starting its next request when one ends."""
    streams = [0] * concurrency
    out = []
    for i, pace in enumerate(paces_ms):
        s = i % concurrency
        start = streams[s]
        first = start + 50 * MS
        end = first + round(pace * MS) * (tokens - 1)
        chunks = [(first, 1)] + [(first + round(pace * MS) * k, 1) for k in range(1, tokens)]
        out.append(RequestRecord(start_ns=start, end_ns=end, chunks=Chunks(chunks),
                                 prompt_tokens=32,
                                 output_tokens=tokens, requested_output=tokens))
        streams[s] = end + MS
    return out


def test_a_slow_start_is_cut_and_left_out_of_the_steady_window() -> None:
    paces = [40.0] * 24 + [20.0] * 72  # 3 slow waves, then converged
    records = _closed_loop(paces, 8)
    found = detect(records, 8)
    w = found.warmup
    assert w.detected and w.converged and found.cut_ns is not None
    assert 20 <= w.requests <= 32, w  # the slow requests (and those in flight at the cut)
    assert w.warm_tpot_ms == pytest.approx(40.0, rel=0.01)
    assert w.steady_tpot_ms == pytest.approx(20.0, rel=0.01)
    steady, _ = steady_after_warmup(records, 8)
    assert steady.reached
    first = min(r.start_ns for r in records)
    assert first + steady.start_s * 1e9 >= found.cut_ns - 1  # no steady second before the cut
    assert "warm-up" in w.text and f"{w.requests} requests" in w.text


def test_a_flat_step_and_its_ramp_are_no_warmup() -> None:
    # the first wave decodes without prefills in between: faster, not slower
    paces = [18.0] * 8 + [20.0, 20.5, 19.5, 20.2] * 22
    found = detect(_closed_loop(paces, 8), 8)
    assert not found.warmup.detected and found.cut_ns is None
    assert found.warmup.text == ""


def test_a_step_slow_past_its_middle_never_converged() -> None:
    paces = [40.0] * 50 + [20.0] * 30  # slow well past the step's middle
    records = _closed_loop(paces, 4)
    steady, warmup = steady_after_warmup(records, 4)
    assert warmup.detected and not warmup.converged
    assert not steady.reached  # nothing left to call steady: the step is flagged
    assert warmup.text.startswith("still warming up")


# ------------------------------------------------------------------ on the simulator's clock

SPEC = SweepPreset(concurrency=[1, 4, 16], input_len=256, output_len=128,
                   prompts_per_concurrency=12)
PROFILE = ServerProfile(launch=["python", "-m", "console.sim"], model_path="test/Example-MoE",
                        port=30000, flags={**LIGHT, "sim-warmup": True})


def _cold_then_warm(tmp: Path, cold_spec: SweepPreset
                    ) -> tuple[list[StepResult], list[StepResult], str]:
    """A sweep right after a restart, then the same sweep on the same (converged) boot; and
    the server's log."""
    store = RunStore(tmp / "warmup.sqlite")
    bench = VirtualBench(store, tmp)

    async def go() -> tuple[list[StepResult], list[StepResult], str]:
        try:
            await bench.restart("p", PROFILE, "warmup:1")
            cold = await bench.sweep("p", PROFILE, cold_spec, label="cold", run_id=None,
                                     repeat_base=0, finish=True)
            warm = await bench.sweep("p", PROFILE, SPEC, label="warm", run_id=None,
                                     repeat_base=0, finish=True)
            assert bench.server is not None
            err = bench.server.runner.log.err
            assert isinstance(err, io.StringIO)  # VirtualBench logs to one
            log = err.getvalue()
            return list(cold.steps), list(warm.steps), log
        finally:
            await bench.close()

    try:
        return run_virtual(go())
    finally:
        store.close()


def _steady(step: StepResult) -> float:
    assert step.metrics is not None
    return step.metrics.headline_total_tok_s()


@pytest.mark.timeout(300)
def test_a_sweep_right_after_a_restart_leaves_its_warmup_out(tmp_path: Path) -> None:
    cold, warm, log = _cold_then_warm(tmp_path, SPEC)
    assert log.count("Try DeepGEMM JIT Compiling for <") == 6  # 0.5.23's runtime JIT (sim)
    first = cold[0].metrics
    assert first is not None and first.warmup is not None and first.warmup.detected
    assert first.warmup.signs.get("deepgemm-jit") == 6
    # the step shows the warm-up it skipped
    text = first.warmup_text()
    assert text.startswith("warm-up ") and "requests" in text and "6 JIT compiles" in text, text
    # the whole step, warm-up and all, is far off the converged server; its steady figure is not
    assert first.total_tok_s < 0.85 * _steady(warm[0])
    for c, w in zip(cold, warm, strict=True):
        assert _steady(c) == pytest.approx(_steady(w), rel=0.02), (c.concurrency, _steady(c),
                                                                  _steady(w))
    # the converged boot's steps warmed nothing up
    assert all(s.metrics is not None and not s.metrics.warmup_text() for s in warm)


@pytest.mark.timeout(300)
def test_a_warmup_load_runs_before_a_sweep_that_starts_cold(tmp_path: Path) -> None:
    spec = SPEC.model_copy(update={"warmup_load": WarmupLoad(concurrency=16, prompts=64)})
    cold, warm, _log = _cold_then_warm(tmp_path, spec)
    first = cold[0].metrics
    assert first is not None and first.warmup_load is not None
    load = first.warmup_load
    assert load.converged and load.requests >= 128 and load.signs.get("deepgemm-jit") == 6
    assert first.warmup_text().startswith("warm-up ") and "before the sweep" in \
        first.warmup_text()
    # measured after convergence: nothing left to cut, and the figures match the warm boot's
    assert first.warmup is not None and not first.warmup.detected
    for c, w in zip(cold, warm, strict=True):
        assert _steady(c) == pytest.approx(_steady(w), rel=0.02)
    assert all(s.metrics is not None and s.metrics.warmup_load is None for s in cold[1:])


def test_a_step_that_compiled_but_shows_no_convergence_is_all_warmup() -> None:
    # two waves slowed alike (a single wave's compiles slow every request the same): no
    # later pace to converge to
    records = _closed_loop([30.0] * 32, 16)
    jit = [f"[2026-12-02 05:40:00 TP0] {deepgemm_jit_line('GEMM_NT_F8F8BF16', 576, 7168, 1)}"]
    steady, warmup = steady_after_warmup(records, 16, log_lines=jit)
    assert warmup.detected and not warmup.converged and not steady.reached
    assert warmup.text == "still warming up: latency never converged in this step " \
        "(1 JIT compile)"
    # the same step without compiles in its log is an ordinary steady step
    steady, warmup = steady_after_warmup(records, 16)
    assert not warmup.detected and steady.reached


def test_log_signs_read_after_a_step_complete_its_warmup() -> None:
    steady = SteadyState(ratio=0.8, threshold=4, reached=True, step_s=9.0, total_tok_s=900.0)
    metrics = StepMetrics(concurrency=4, completed=16, steady=steady,
                          warmup=Warmup(detected=False, steady_tpot_ms=20.0, tolerance=0.05))
    jit = [deepgemm_jit_line("GEMM_NT_F8F8BF16", 576, 7168, 1)] * 2
    # compiles, yet the records showed no slow start: the whole step was warm-up
    got = with_log_signs(metrics, jit)
    assert got.warmup is not None and got.warmup.detected and not got.warmup.converged
    assert got.warmup.signs == {"deepgemm-jit": 2} and got.no_steady_state
    assert got.headline_total_tok_s() == metrics.total_tok_s  # the whole-step figure, flagged
    # a warm-up the records found keeps its cut and gains the signs
    found = metrics.model_copy(update={"warmup": Warmup(detected=True, requests=5, seconds=2.0)})
    got = with_log_signs(found, jit)
    assert got.steady == steady and got.warmup is not None and got.warmup.requests == 5
    assert got.warmup.text == "warm-up 2 s / 5 requests (2 JIT compiles)"
    # autotune and capture lines at startup are not runtime compiles
    assert with_log_signs(metrics, ["FlashInfer autotune completed."]).steady == steady
    assert with_log_signs(metrics, []) == metrics


@pytest.mark.timeout(120)
def test_a_sweep_over_http_reads_the_warmup_lines_of_its_server(sim_factory: SimFactory,
                                                                 tmp_path: Path) -> None:
    """The product's path: run_sweep with the evidence recorder on a fresh simulated server's
    log (console.diagnose); what is asserted is counted, not timed."""
    sim = sim_factory("--tp-size", "8", "--quantization", "modelopt_fp4", "--sim-warmup",
                      "--sim-speed", "4", "--sim-seed", "1")
    spec = SweepPreset(concurrency=[4, 8], input_len=64, output_len=32,
                       prompts_per_concurrency=2, warmup_prompts=0)

    async def sweep() -> list[StepResult]:
        with RunStore(tmp_path / "h.sqlite") as store:
            recorder = EvidenceRecorder(EvidenceSources(log=LocalLog(sim.log_path)),
                                        store=store)
            out = await run_sweep(spec, sim.base_url, engine=NativeEngine(max_workers=1),
                                  store=store, recorder=recorder)
            assert out.run_id is not None
            assert store.get_run(out.run_id).steps == list(out.steps)  # stored as judged
            return list(out.steps)

    steps = asyncio.run(sweep())
    first, second = (s.metrics for s in steps)
    assert first is not None and first.warmup is not None
    assert first.warmup.detected and first.warmup.signs == {"deepgemm-jit": 6}
    assert "6 JIT compiles" in first.warmup_text()
    assert second is not None and second.warmup is not None and not second.warmup.signs


def test_time_to_steady_joins_the_restart_cost_in_the_ab_estimate() -> None:
    spec = SweepPreset(concurrency=[4, 16], input_len=256, output_len=128,
                       prompts_per_concurrency=4)
    model = {4: 10.0, 16: 20.0}  # seconds per step of this workload (the sim's model)
    plain = estimate(spec, 3, True, restart_s=30.0, model_step_s=model)
    load = spec.model_copy(update={"warmup_load": WarmupLoad(concurrency=16, prompts=32)})
    warmed = estimate(load, 3, True, restart_s=30.0, model_step_s=model)
    # 6 passes, each 3 rounds of 32 prompts at 16 (half of the 64-prompt step's 20 s)
    assert warmed.seconds - plain.seconds == pytest.approx(6 * 3 * 10.0)
