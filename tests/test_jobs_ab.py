"""A/B end to end: restart into A, sweep, restart into B, sweep, compare (real sim, real sshd)."""

from __future__ import annotations

import asyncio
import contextvars

import pytest

from console.bench.models import StepResult
from console.config_models import ServerProfile, SweepPreset
from console.jobs.ab import ABProgress, delta_table, noise_note, profile_sweep, run_ab
from console.server.lease import HostBusy, host_lease
from console.server.lifecycle import LifecycleError
from console.server.records import LaunchRecord
from console.store.db import RunStore
from tests.support.server_fixtures import ServerEnv

QUICK = SweepPreset(
    concurrency=[1, 4], input_len=32, output_len=16, prompts_per_concurrency=2, repeats=2,
    flush_cache=False,
)


@pytest.mark.sshd
async def test_ab_end_to_end_over_ssh(server_env: ServerEnv, ssh_transport, tmp_path) -> None:
    life = server_env.lifecycle(ssh_transport)
    store = RunStore(tmp_path / "runs.sqlite")
    fast = {"sim-speed": 20.0}
    a = ("triton-moe", server_env.profile(**fast, **{"moe-runner-backend": "triton"}))
    b = ("cutlass-moe", server_env.profile(**fast, **{"moe-runner-backend": "cutlass"}))
    progress: list[ABProgress] = []
    seen_backends: list[str] = []
    inner = profile_sweep(life, QUICK, store=store)

    async def sweep(name: str, profile: ServerProfile, record: LaunchRecord) -> list[StepResult]:
        # while A/B runs, nobody else (another task tree, e.g. an app worker) may restart
        with pytest.raises(HostBusy):
            await asyncio.create_task(life.restart("intruder", profile),
                                      context=contextvars.Context())
        seen_backends.append(str(profile.flags["moe-runner-backend"]))
        return list(await inner(name, profile, record))

    result = await run_ab(life, a, b, sweep, on_progress=progress.append, repeats=QUICK.repeats)
    assert seen_backends == ["triton", "cutlass"]
    assert [p.stage for p in progress] == [
        "validate", "restart-a", "sweep-a", "restart-b", "sweep-b", "compare", "done"
    ]
    assert result.record_a.profile == "triton-moe" and result.record_b.profile == "cutlass-moe"
    assert result.record_a.pid != result.record_b.pid
    assert [r.concurrency for r in result.comparison.rows] == [1, 4]
    assert all(s.status == "ok" for s in result.steps_a + result.steps_b)
    row = result.comparison.rows[1].get("total tok/s")
    assert row.a and row.b and row.pct is not None and row.within_noise is not None
    table = delta_table(result)
    assert table[0][:3] == ("concurrency", "triton-moe", "cutlass-moe") and len(table) == 3
    assert set(result.series()) == {"triton-moe", "cutlass-moe"}
    assert "noise" in result.note
    assert set(result.restart_timings) == {"triton-moe", "cutlass-moe"}
    assert len(store.list_runs()) == 2  # both sweeps committed to history
    assert not host_lease(server_env.host.name).busy
    await life.stop()


async def test_ab_validates_both_profiles_before_stopping(server_env: ServerEnv,
                                                          local_transport) -> None:
    life = server_env.lifecycle(local_transport)
    running = await life.start("current", server_env.profile())
    calls: list[str] = []

    async def sweep(name, profile, record):  # pragma: no cover - must not run
        calls.append(name)
        return []

    with pytest.raises(LifecycleError, match="dsa-prefill-backend"):
        await run_ab(
            life,
            ("a", server_env.profile()),
            ("b", server_env.profile(**{"nsa-prefill-backend": "fa3"})),
            sweep,
        )
    assert calls == []
    status = await life.status()
    assert status.running and status.record.pid == running.pid
    await life.stop()


def test_noise_note_without_repeats() -> None:
    from console.bench.compare import compare_runs
    from console.bench.models import StepMetrics

    def step(c: int, tok: float) -> StepResult:
        return StepResult(index=0, concurrency=c, status="ok",
                          metrics=StepMetrics(concurrency=c, total_tok_s=tok))

    single = compare_runs([step(1, 100.0)], [step(1, 110.0)])
    assert "noise is unknown" in noise_note(single)
    repeated = compare_runs([step(1, 100.0), step(1, 120.0)], [step(1, 105.0), step(1, 112.0)])
    assert "within run-to-run noise" in noise_note(repeated) and "1" in noise_note(repeated)
