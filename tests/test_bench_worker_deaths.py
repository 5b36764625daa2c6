"""Load-generator worker processes that die: the step says so, the next step still runs."""

from __future__ import annotations

import asyncio
import signal

import pytest

from console.bench.native import WorkerPool
from console.bench.workload import Workload
from tests.support.sim_fixtures import SimProcess

WORK = Workload(endpoint="generate", input_len=8, output_len=40)


@pytest.mark.slow
async def test_a_worker_killed_mid_step_fails_the_step_then_is_replaced(
    ideal_sim: SimProcess
) -> None:
    with WorkerPool(streams_per_worker=1, max_workers=2) as pool:
        task = asyncio.ensure_future(
            pool.run(ideal_sim.base_url, WORK, 2, prompts=None, seconds=3, timeout_s=30,
                     seed=1)
        )
        # The step's 3 s window opens only once both workers exist (WorkerPool.run): wait for
        # them, not for a fixed time, then kill one while the step is still running.
        for _ in range(600):
            if len(pool._workers) == 2 or task.done():
                break
            await asyncio.sleep(0.05)
        assert not task.done() and len(pool._workers) == 2
        victim = pool._workers[0].process
        victim.send_signal(signal.SIGKILL)
        # Half the streams vanished: the numbers would be for concurrency 1, labelled 2.
        with pytest.raises(RuntimeError, match="worker"):
            await task
        records, _window, workers = await pool.run(
            ideal_sim.base_url, WORK, 2, prompts=4, seconds=None, timeout_s=30, seed=2
        )
        assert workers == 2 and len(records) == 4 and all(r.ok for r in records)
        assert victim not in [w.process for w in pool._workers]
