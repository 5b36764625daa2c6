"""Fixtures and helpers for the bench and store tests.

`ideal_sim` starts the simulator in ideal-timing mode (TTFT 20 ms, ITL 5 ms) so sweeps are fast
and their latencies are known; `bench_db` is a fresh history database path.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from console.bench.models import Distribution, StepMetrics, StepResult

if TYPE_CHECKING:  # imported at run time it is loaded before pytest can rewrite its asserts
    from tests.support.sim_fixtures import SimFactory, SimProcess

IDEAL_TTFT_MS = 20.0
IDEAL_ITL_MS = 5.0
DATA = Path(__file__).resolve().parents[1] / "data" / "bench"


@pytest.fixture
def ideal_sim(sim_factory: SimFactory) -> SimProcess:
    return sim_factory(
        "--sim-seed", "1",
        "--sim-ideal-ttft-ms", str(IDEAL_TTFT_MS),
        "--sim-ideal-itl-ms", str(IDEAL_ITL_MS),
    )  # fmt: skip


@pytest.fixture
def bench_db(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "history.sqlite3"


def fake_step(
    concurrency: int,
    total: float,
    *,
    repeat: int = 0,
    index: int = 0,
    status: str = "ok",
    ttft: float = 50.0,
) -> StepResult:
    """A stored-looking step with made-up but self-consistent numbers."""
    metrics = StepMetrics(
        concurrency=concurrency,
        completed=concurrency * 4,
        duration_s=10.0,
        request_per_s=concurrency * 0.4,
        input_tok_s=total * 0.75,
        output_tok_s=total * 0.25,
        total_tok_s=total,
        measured_concurrency=concurrency * 0.98,
        ttft_ms=Distribution(mean=ttft, p50=ttft, p90=ttft * 1.5, p99=ttft * 2, count=4),
        itl_ms=Distribution(mean=10, p50=10, p90=12, p99=20, count=40),
        tpot_ms=Distribution(mean=10, p50=10, p90=11, p99=12, count=4),
        e2e_ms=Distribution(mean=1000, p50=1000, p90=1100, p99=1200, count=4),
    )
    return StepResult(
        index=index,
        concurrency=concurrency,
        repeat=repeat,
        status=status,  # type: ignore[arg-type]
        metrics=metrics if status == "ok" else None,
        error=None if status == "ok" else "server died",
        log_tail=[] if status == "ok" else ["[2026] ERROR boom"],
    )
