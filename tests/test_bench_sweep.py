"""Sweeps against the real simulator: direct URL, real-sshd port forward, several worker
processes, failed steps, cancel, SGLang's own client, and a sweep killed mid-way."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from console import aio
from console.bench.bench_serving import BenchServingEngine
from console.bench.engines import NativeEngine
from console.bench.knee import knee_of_steps
from console.bench.models import (
    StepFailed,
    StepFinished,
    StepMetrics,
    StepPhase,
    StepStarted,
    SweepEvent,
    SweepFinished,
)
from console.bench.sweep import failure_reason, run_sweep, server_url
from console.config_models import SweepPreset
from console.host.forward_proc import ProcessPortForward
from console.host.local import LocalTransport
from console.host.ssh import SshTransport
from console.store.db import RunStore
from console.store.models import RunMeta
from tests.support.bench_fixtures import IDEAL_ITL_MS, IDEAL_TTFT_MS
from tests.support.sglang_bench import SHIM_PATH
from tests.support.sim_fixtures import SimProcess
from tests.support.tokenizer import build_tokenizer

ROOT = Path(__file__).resolve().parents[1]
QUICK = SweepPreset(concurrency=[1, 4], input_len=32, output_len=12, prompts_per_concurrency=2)


def _close_to(value: float | None, truth: float, rel: float) -> bool:
    return value is not None and abs(value - truth) <= truth * rel


def _timing_right(outcome: SweepFinished) -> bool:
    """Every step measured the ideal sim's TTFT (not early, < 40 ms late) and ITL (30 %)."""
    return all(
        s.metrics is not None and _close_to(s.metrics.tpot_ms.p50, IDEAL_ITL_MS, 0.3)
        and IDEAL_TTFT_MS <= (s.metrics.ttft_ms.p50 or 0) < IDEAL_TTFT_MS + 40
        for s in outcome.steps
    )


async def _best_of_three(sweep: Callable[[], Awaitable[SweepFinished]]) -> SweepFinished:
    """The first of up to three sweeps that measured the ideal timing, else the last one.

    The sim's ITL is 5 ms: a loaded machine that holds the client or the sim back by one
    scheduler slice bunches tokens and moves a p50 past 30 %, once; a client that measures
    wrong does so every time. A sweep whose steps failed is returned at once (the caller's
    asserts say why)."""
    outcome = await sweep()
    for _ in range(2):
        if _timing_right(outcome) or any(s.status != "ok" for s in outcome.steps):
            break
        outcome = await sweep()
    return outcome


async def test_native_sweep_direct_url_measures_the_ideal_timing(
    ideal_sim: SimProcess, bench_db: Path
) -> None:
    events: list[SweepEvent] = []
    with RunStore(bench_db) as store:

        async def sweep() -> SweepFinished:
            events.clear()
            return await run_sweep(
                QUICK, ideal_sim.base_url, engine=NativeEngine(), store=store,
                meta=RunMeta(host="local", profile="ideal"), on_event=events.append,
            )  # fmt: skip

        outcome = await _best_of_three(sweep)
        run = store.get_run(outcome.run_id or 0)
    assert outcome.status == "finished"
    assert [s.status for s in outcome.steps] == ["ok", "ok"]
    assert [e.concurrency for e in events if isinstance(e, StepStarted)] == [1, 4]
    assert sum(isinstance(e, StepFinished) for e in events) == 2
    for step in outcome.steps:
        m = step.metrics
        assert m is not None
        assert m.completed == step.concurrency * 2 and m.errors == 0
        assert m.output_tokens == m.completed * 12  # server counts, ignore_eos honoured
        assert m.input_tokens == m.completed * 32  # input_ids: exact lengths
        assert m.output_len_mismatches == 0
        assert IDEAL_TTFT_MS <= (m.ttft_ms.p50 or 0) < IDEAL_TTFT_MS + 40
        assert _close_to(m.tpot_ms.p50, IDEAL_ITL_MS, 0.3)
        assert m.total_tok_s > m.output_tok_s > 0
        assert m.client_cpu_max is not None and 0 < m.client_cpu_max < 1.5
        assert m.client_loop_lag_p99_ms is not None and m.client_loop_lag_p99_ms >= 0
    assert 3.0 < (outcome.steps[1].metrics.measured_concurrency or 0) <= 4.05  # type: ignore[union-attr]
    assert run.summary.meta.server_version == "0.5.23"  # /server_info snapshot stored
    assert run.summary.meta.server_info and run.summary.meta.spec["output_len"] == 12
    assert [s.concurrency for s in run.steps] == [1, 4]


@pytest.mark.parametrize("endpoint", ["completions", "chat"])
async def test_openai_endpoints_use_usage_counts(ideal_sim: SimProcess, endpoint: str) -> None:
    spec = QUICK.model_copy(update={"concurrency": [2], "endpoint": endpoint})
    outcome = await _best_of_three(
        lambda: run_sweep(spec, ideal_sim.base_url, engine=NativeEngine()))
    (step,) = outcome.steps
    assert step.status == "ok", step.error
    m = step.metrics
    assert m is not None and m.completed == 4
    assert m.output_tokens == 4 * 12
    assert m.input_tokens > 0  # from usage.prompt_tokens
    assert _close_to(m.tpot_ms.p50, IDEAL_ITL_MS, 0.3)


async def test_several_worker_processes_share_a_step(ideal_sim: SimProcess) -> None:
    spec = QUICK.model_copy(update={"concurrency": [6], "prompts_per_concurrency": 2})
    engine = NativeEngine(streams_per_worker=3, max_workers=2)
    outcome = await run_sweep(spec, ideal_sim.base_url, engine=engine)
    m = outcome.steps[0].metrics
    assert m is not None and m.workers == 2
    assert m.completed == 12 and m.errors == 0
    assert 4.5 < m.measured_concurrency <= 6.05  # both processes really ran streams at once


@pytest.mark.sshd
async def test_sweep_through_a_real_sshd_port_forward(
    ideal_sim: SimProcess, ssh_transport: SshTransport
) -> None:
    spec = QUICK.model_copy(update={"concurrency": [2]})
    async with server_url(transport=ssh_transport, port=ideal_sim.port) as url:
        assert url != ideal_sim.base_url
        outcome = await run_sweep(spec, url, engine=NativeEngine())
    (step,) = outcome.steps
    assert step.status == "ok", step.error
    assert step.metrics is not None and step.metrics.completed == 4
    assert step.metrics.output_tokens == 48


@pytest.mark.sshd
@pytest.mark.parametrize("relay", ["python", "openssh"])
async def test_a_sweeps_load_forward_relays_in_a_child_process(
    ideal_sim: SimProcess, ssh_transport: SshTransport, relay: str
) -> None:
    spec = QUICK.model_copy(update={"concurrency": [2]})
    forward = await ssh_transport.load_forward_port(ideal_sim.port, relay=relay)
    assert isinstance(forward, ProcessPortForward)
    child = forward._processes[0]
    try:
        outcome = await run_sweep(spec, f"http://127.0.0.1:{forward.local_port}",
                                  engine=NativeEngine())
    finally:
        await forward.close()
    (step,) = outcome.steps
    assert step.status == "ok", step.error
    assert step.metrics is not None and step.metrics.output_tokens == 48
    assert child.pid != os.getpid() and child.returncode == 0  # relayed there, now gone


async def test_server_gone_stops_the_sweep_and_says_so_once(
    ideal_sim: SimProcess, bench_db: Path
) -> None:
    spec = QUICK.model_copy(update={"concurrency": [1, 2, 4, 8], "request_timeout_s": 5})
    events: list[SweepEvent] = []

    def on_event(event: SweepEvent) -> None:
        events.append(event)
        if isinstance(event, StepFinished) and event.result.concurrency == 1:
            ideal_sim.process.kill()  # the server dies after the first step
            ideal_sim.process.wait()

    with RunStore(bench_db) as store:
        outcome = await run_sweep(
            spec, ideal_sim.base_url, engine=NativeEngine(), store=store, on_event=on_event,
            log_tail=lambda: ideal_sim.log_text().splitlines(),
        )  # fmt: skip
        stored = store.get_run(outcome.run_id or 0)
    # Before: every later step ran, each failing with a bare "flush_cache failed: ReadError:".
    assert [s.status for s in outcome.steps] == ["ok", "failed"]
    assert outcome.status == "failed" and stored.summary.status == "failed"
    assert outcome.reason and "is gone (Connect" in outcome.reason
    assert outcome.reason.endswith("sweep stopped")
    failed = outcome.steps[1]
    assert failed.error and failed.error.startswith("flush_cache failed: ")
    assert not failed.error.rstrip().endswith(":")  # a reason, never an empty one
    assert failed.log_tail and any("ready to roll" in line for line in failed.log_tail)
    assert sum(isinstance(e, StepFailed) for e in events) == 1
    assert [s.status for s in stored.steps] == ["ok", "failed"]
    assert stored.steps[1].log_tail == failed.log_tail


async def test_failed_steps_with_the_server_up_go_on(ideal_sim: SimProcess) -> None:
    # Every request times out (TTFT is 20 ms of simulated time): no request completes, so
    # each step is failed, not "ok" with zero throughput; the server is up, so the sweep
    # goes on, and the knee ignores the failed steps.
    spec = QUICK.model_copy(update={"concurrency": [1, 2], "request_timeout_s": 0.001})
    outcome = await run_sweep(spec, ideal_sim.base_url, engine=NativeEngine())
    assert [s.status for s in outcome.steps] == ["failed", "failed"]
    assert outcome.status == "finished" and outcome.reason is None
    for step in outcome.steps:
        assert step.error and step.error.startswith("no request completed")
        assert step.metrics is not None and step.metrics.completed == 0
        assert step.metrics.ttft_ms.p50 is None
    assert knee_of_steps(outcome.steps).kind == "insufficient"


def test_a_step_with_no_completed_request_is_failed() -> None:
    timed_out = StepMetrics(concurrency=4, completed=0, incomplete=4, output_tok_s=12.0)
    reason = failure_reason(timed_out)
    assert reason and "no request completed" in reason and "4 cut off" in reason
    assert failure_reason(timed_out.model_copy(update={"completed": 1})) is None


async def test_stop_on_failure_stops(ideal_sim: SimProcess) -> None:
    spec = QUICK.model_copy(update={"concurrency": [1, 2, 4], "stop_on_failure": True})
    ideal_sim.process.kill()
    ideal_sim.process.wait()
    outcome = await run_sweep(spec, ideal_sim.base_url, engine=NativeEngine())
    assert outcome.status == "failed" and len(outcome.steps) == 1


async def test_cancel_mid_step_is_quick_and_recorded(ideal_sim: SimProcess, bench_db: Path) -> None:
    spec = QUICK.model_copy(update={"concurrency": [2, 4], "step_seconds": 60.0})
    cancel = asyncio.Event()

    def on_event(event: SweepEvent) -> None:
        if getattr(event, "phase", None) == "measure":
            asyncio.get_running_loop().call_later(1.0, cancel.set)

    with RunStore(bench_db) as store:
        started = time.monotonic()
        outcome = await run_sweep(
            spec, ideal_sim.base_url, engine=NativeEngine(), store=store,
            on_event=on_event, cancel_event=cancel,
        )  # fmt: skip
        assert time.monotonic() - started < 15
        assert outcome.status == "cancelled"
        assert store.get_run(outcome.run_id or 0).summary.status == "cancelled"


async def test_task_cancel_marks_the_run_cancelled(ideal_sim: SimProcess, bench_db: Path) -> None:
    spec = QUICK.model_copy(update={"concurrency": [2], "step_seconds": 60.0})
    with RunStore(bench_db) as store:
        task = asyncio.create_task(run_sweep(spec, ideal_sim.base_url, engine=NativeEngine(),
                                             store=store))  # fmt: skip
        await asyncio.sleep(2.0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await aio.wait_for(task, timeout=15)
        (summary,) = store.list_runs()
        assert summary.status == "cancelled"


@pytest.mark.slow
async def test_bench_serving_engine_runs_sglangs_client(
    ideal_sim: SimProcess, any_transport: LocalTransport | SshTransport, tmp_path: Path
) -> None:
    """SGLang's client on the 'host', driven through the Transport (local and real sshd)."""
    tokenizer = build_tokenizer(tmp_path / "tok")
    engine = BenchServingEngine(
        any_transport,
        host_base_url=ideal_sim.base_url,
        command=[sys.executable, str(SHIM_PATH)],
        tokenizer=str(tokenizer),
        workdir=str(tmp_path),
    )
    spec = QUICK.model_copy(update={"concurrency": [2], "engine": "bench-serving",
                                    "warmup_prompts": 1})  # fmt: skip
    lines: list[str] = []

    def keep_output(event: SweepEvent) -> None:
        if isinstance(event, StepPhase) and event.phase == "output":
            lines.append(event.detail)

    async def sweep() -> SweepFinished:
        lines.clear()
        return await run_sweep(spec, ideal_sim.base_url, engine=engine, on_event=keep_output)

    outcome = await _best_of_three(sweep)
    (step,) = outcome.steps
    assert step.status == "ok", (step.error, lines[-10:])
    m = step.metrics
    assert m is not None and m.engine == "bench-serving"
    assert m.completed == 4 and m.output_tokens == 48
    assert _close_to(m.tpot_ms.p50, IDEAL_ITL_MS, 0.3)
    assert step.raw is not None and step.raw["max_concurrency"] == 2
    assert any("Serving Benchmark Result" in line for line in lines)  # progress was streamed


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


@pytest.mark.slow
def test_killed_sweep_keeps_completed_steps(ideal_sim: SimProcess, tmp_path: Path) -> None:
    db = tmp_path / "kill.db"
    argv = [
        sys.executable, "-m", "console.cli", "sweep", "--url", ideal_sim.base_url,
        "--concurrency", "1,2,4,8,16", "--input-len", "16", "--output-len", "40",
        "--num-prompts", "8", "--db", str(db), "--json",
    ]  # fmt: skip
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, "PLATEAU_DB": str(db)})  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        done = 0
        while time.monotonic() < deadline and proc.poll() is None:
            if db.exists():
                try:
                    with sqlite3.connect(db) as raw:
                        done = raw.execute("SELECT COUNT(*) FROM steps").fetchone()[0]
                except sqlite3.OperationalError:
                    done = 0
            if done >= 2:
                break
            time.sleep(0.05)
        assert done >= 2, proc.stderr.read() if proc.stderr else ""
        workers = _children(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        # its load workers notice and exit instead of loading the server on their own
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() for p in workers):
            time.sleep(0.1)
        assert workers and not any(Path(f"/proc/{p}").exists() for p in workers)
    finally:
        if proc.poll() is None:
            proc.kill()
    with RunStore(db) as store:
        (summary,) = store.list_runs()
        assert summary.status == "interrupted"
        run = store.get_run(summary.id)
    assert len(run.steps) >= 2 and len(run.steps) < 5
    assert [s.concurrency for s in run.steps[:2]] == [1, 2]
    assert all(s.status == "ok" and s.metrics and s.metrics.completed == 8 for s in run.steps)
