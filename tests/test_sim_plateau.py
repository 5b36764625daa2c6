"""The performance model over real HTTP: throughput rises with concurrency, then flattens, and
backend flags move the curve."""

from __future__ import annotations

import asyncio
import re

import httpx
import pytest

from tests.support.sim_fixtures import SimFactory, SimProcess

INPUT_IDS = list(range(3, 131))  # 128 prompt tokens
SPEED = "4"


DECODE = re.compile(r"Decode batch, #running-req: (\d+), .*gen throughput \(token/s\): ([\d.]+)")
LONG_OUTPUT = 160  # decode steps at full batch: several Decode lines (one per 40 steps)


async def _hold_batch(base: str, concurrency: int) -> None:
    """`concurrency` long requests at once: the running batch sits at `concurrency` for most
    of LONG_OUTPUT decode steps, however slowly this client reads the streams."""
    body = {"input_ids": INPUT_IDS, "stream": True,
            "sampling_params": {"max_new_tokens": LONG_OUTPUT, "ignore_eos": True}}
    limits = httpx.Limits(max_connections=concurrency + 4)
    async with httpx.AsyncClient(limits=limits, timeout=120) as client:

        async def one() -> None:
            async with client.stream("POST", f"{base}/generate", json=body) as resp:
                async for _ in resp.aiter_bytes():
                    pass

        await asyncio.gather(*(one() for _ in range(concurrency)))


def _sim_clock_throughput(sim: SimProcess, concurrency: int) -> float:
    """The sim's own gen throughput (tokens over its simulated clock, as SGLang's Decode line
    reports GPU time) while the batch was full: the model's figure, not this machine's. The
    best window: one that also spans a prefill step, or a clock resync after the process fell
    far behind, can only read lower."""
    seen = len(sim.log_text())
    asyncio.run(_hold_batch(sim.base_url, concurrency))
    at_full = [float(m.group(2)) for m in DECODE.finditer(sim.log_text()[seen:])
               if int(m.group(1)) == concurrency]
    assert len(at_full) >= 2, sim.log_text()[seen:][-2000:]
    return max(at_full)


@pytest.mark.slow
def test_throughput_rises_then_plateaus(sim_factory: SimFactory) -> None:
    sim = sim_factory("--sim-speed", SPEED, "--sim-seed", "1")
    curve = {c: _sim_clock_throughput(sim, c) for c in (1, 4, 16, 48)}
    t1, t4, t16, t48 = (curve[c] for c in (1, 4, 16, 48))
    print("curve", {c: round(v) for c, v in curve.items()})
    assert t4 > 2.0 * t1, curve
    assert t16 > 1.4 * t4, curve
    # flattening: tripling concurrency past the knee buys far less than the step before
    assert t48 / t16 < t16 / t4, curve
    assert t48 < 1.7 * t16, curve
    log = sim.log_text()
    assert "Decode batch, #running-req: " in log
    assert "Prefill batch, #new-seq: " in log


@pytest.mark.slow
def test_moe_runner_backend_changes_the_curve(sim_factory: SimFactory) -> None:
    # On the sim's clock (its Decode lines at a full batch of 32), as the shape test reads
    # it: the client's wall-clock rate of two sweeps run one after the other moved with this
    # machine's load (the 6% it had to show was within that), and at a faster clock both
    # servers outran a one-process client on a busy 2-core machine.
    fast = sim_factory("--sim-speed", SPEED, "--sim-seed", "1", "--moe-runner-backend", "cutlass")
    slow = sim_factory("--sim-speed", SPEED, "--sim-seed", "1", "--moe-runner-backend", "triton")
    t_fast = _sim_clock_throughput(fast, 32)
    t_slow = _sim_clock_throughput(slow, 32)
    print("moe cutlass/triton", round(t_fast), round(t_slow))
    assert t_fast > 1.3 * t_slow, (t_fast, t_slow)
    assert "Using default MoE kernel config. Performance might be sub-optimal!" in slow.log_text()
    assert "Using default MoE kernel config" not in fast.log_text()
