"""Numbers that agree (issue 26, item 11), below the screen: the server's version is known
the moment a start says READY (`plateau snapshot --until ready` showed "sglang ?" beside it);
the knee's gain is the one the tables and the chart give for the same levels."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from console.bench.knee import knee_of_steps
from console.bench.models import SteadyState, StepResult
from console.cli import main
from console.host.local import LocalTransport
from console.session.adapters import lifecycle_sink
from console.session.events import ServerStatus, SessionEvent
from console.share.levels import levels
from console.store.db import RunStore
from console.store.models import RunMeta
from tests.support.bench_fixtures import fake_step
from tests.support.server_fixtures import ServerEnv
from widgets.sweep_chart import ChartRun


async def test_the_ready_a_start_reports_names_the_servers_version(
    server_env: ServerEnv, local_transport: LocalTransport
) -> None:
    emitted: list[SessionEvent] = []
    sink = lifecycle_sink(server_env.host.name, emitted.append, "sim")
    life = server_env.lifecycle(local_transport)
    await life.start("sim", server_env.profile(), sink)
    try:
        info = httpx.get(f"http://127.0.0.1:{server_env.port}/server_info", timeout=5,
                         trust_env=False).json()
        ready = [e for e in emitted if isinstance(e, ServerStatus) and e.state == "ready"]
        assert [e.version for e in ready] == [info["version"]] == ["0.5.23"]
    finally:
        await life.stop()


@pytest.mark.slow
@pytest.mark.parametrize("size", ["80x24", "120x40"])
def test_snapshot_until_ready_shows_the_version_beside_ready(tmp_path: Path, size: str) -> None:
    out = tmp_path / "ready.txt"
    assert main(["snapshot", "--demo", "--seed", "1", "--until", "ready", "--size", size,
                 "--out", str(out)]) == 0
    header = out.read_text().splitlines()[0]
    assert "READY" in header and "sglang 0.5.23 ·" in header, header


def _steady_step(index: int, concurrency: int, whole: float, steady: float) -> StepResult:
    """A step whose steady-state window ran faster than the whole step (ramp and drain)."""
    step = fake_step(concurrency, whole, index=index)
    assert step.metrics is not None
    window = SteadyState(ratio=0.9, threshold=concurrency, reached=True, window_s=8.0,
                         total_tok_s=steady, output_tok_s=steady / 4)
    return step.model_copy(update={"metrics": step.metrics.model_copy(update={"steady": window})})


def test_the_knees_gain_is_the_level_tables_and_the_charts(tmp_path: Path) -> None:
    """Was: the knee "+287.6%" (whole-step totals) beside the report's level table and the
    verdict (steady-state totals) giving +282% for the same two levels."""
    with RunStore(tmp_path / "h.db") as store:
        run_id = store.create_run(RunMeta(host="demo", label="x"), started_at=1.0)
        for index, (c, whole, steady) in enumerate([(1, 100.0, 104.0), (4, 387.6, 397.3)]):
            store.add_step(run_id, _steady_step(index, c, whole, steady))
        store.finish_run(run_id, "finished")
        run = store.get_run(run_id)
    table = {lv.concurrency: lv.total_tok_s for lv in levels(run)}
    table_gain = f"{(table[4] / table[1] - 1) * 100:+.1f}%"
    knee = knee_of_steps(run.steps)
    assert knee.kind == "scaling" and f"{knee.gain_pct:+.1f}%" == table_gain == "+282.0%"
    assert knee.sentence == "still scaling at 4: +282.0% from 1\u21924 (steady total tok/s)"
    chart = dict(ChartRun("x", list(run.steps)).points("total_tok_s"))
    assert chart == table
