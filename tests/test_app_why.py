"""The Why view: `W` (w is the log's wrap) shows the newest run's causes with their evidence
from the stored evidence; a cause's number key opens the A/B picker with B = the run's profile
plus the suggested flags, validated like the flags editor validates."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from textual.widgets import Input, Select, Static

from console.app.app import PlateauApp
from console.app.screens.modals import ABPicker
from console.bench.models import StepMetrics, StepResult
from console.diagnose.models import RunEvidence, StartupFacts, StepEvidence
from console.server.flags import FlagSchema, parse_help
from console.server.known import TYPE_HINTS
from console.session.replay import ReplaySession
from console.store.db import RunStore
from console.store.models import RunMeta
from tests.support.app_fixtures import app_config, demo_events, fixed_clock
from widgets.why_view import WhyView


class SchemaReplay(ReplaySession):
    """A replayed host that can answer --help (the sim's parser), so B can be validated."""

    async def flag_schema(self, profile: str) -> FlagSchema:
        from console.sim.args import build_sglang_parser, build_sim_parser

        os.environ.setdefault("COLUMNS", "100")
        sglang = parse_help(build_sglang_parser().format_help(), version="0.5.23")
        sim = parse_help(build_sim_parser().format_help(), version="0.5.23")  # as discovery
        merged = sglang.model_copy(update={"flags": {**sim.flags, **sglang.flags}})
        return merged.with_hints(TYPE_HINTS)


def _stored_run(db: Path, spec: dict[str, Any] | None = None) -> None:
    """The reference story as stored evidence: eager decode above a ceiling of 64."""
    with RunStore(db) as store:
        run_id = store.create_run(RunMeta(host="demo", profile="cutlass-moe",
                                          flags={"cuda-graph-max-bs-decode": 64},
                                          spec=spec or {}))
        levels = ((1, 20.0), (4, 80.0), (16, 300.0), (32, 438.0), (64, 757.0), (128, 806.0))
        for index, (c, total) in enumerate(levels):
            step = StepResult(index=index, concurrency=c, status="ok", started_at=100.0 * index,
                              finished_at=100.0 * index + 60,
                              metrics=StepMetrics(concurrency=c, completed=c,
                                                  total_tok_s=total, measured_concurrency=c))
            store.add_step(run_id, step)
            graph = c <= 64
            store.save_step_evidence(run_id, StepEvidence(
                index=index, concurrency=c, started_at=step.started_at,
                finished_at=step.finished_at,
                decode_rows=[(c, 0, 0.02, graph, c / (0.2 if graph else 0.45))] * 12))
        store.save_run_evidence(run_id, RunEvidence(
            startup=StartupFacts(tp_size=8, capture_bs=[1, 2, 4, 8, 16, 32, 48, 64])))
        store.finish_run(run_id, "finished")


async def test_why_view_lists_causes_and_opens_an_ab_of_the_fix(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    _stored_run(db)
    loaded = app_config()
    host = loaded.config.hosts[0]
    session = SchemaReplay.from_events(host, demo_events(host.name), clock=fixed_clock)
    app = PlateauApp(loaded, [session], clock=fixed_clock, store_path=db, tick_seconds=None)
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.pause()
        await pilot.press("W")
        for _ in range(50):
            await pilot.pause(0.05)
            view = app.screen.query_one("#why-view", WhyView)
            text = view.plain
            if "cuda-graph-ceiling" in text:
                break
        assert "knee: saturates at ~64" in text
        assert "1. cuda-graph-ceiling" in text
        assert "#running-req 128 > cuda-graph-max-bs-decode 64" in text  # as the lines print it
        assert "[1: A/B with this as B]" in text
        await pilot.press("1")
        for _ in range(50):
            await pilot.pause(0.05)
            if isinstance(app.screen, ABPicker):
                break
        picker: Any = app.screen
        assert isinstance(picker, ABPicker), [e.message for e in app.app_events]
        assert (picker.a, picker.b) == ("cutlass-moe", "cutlass-moe+cuda-graph-ceiling")
        b = app.config.profiles["cutlass-moe+cuda-graph-ceiling"]
        assert b.flags["cuda-graph-max-bs-decode"] == 128
        assert b.flags["moe-runner-backend"] == "cutlass"


async def _open_cause_ab(db: Path) -> Any:
    loaded = app_config()
    host = loaded.config.hosts[0]
    session = SchemaReplay.from_events(host, demo_events(host.name), clock=fixed_clock)
    app = PlateauApp(loaded, [session], clock=fixed_clock, store_path=db, tick_seconds=None)
    return app


async def _press_1(app: Any, pilot: Any) -> ABPicker:
    await pilot.press("W")
    for _ in range(50):
        await pilot.pause(0.05)
        if "cuda-graph-ceiling" in app.screen.query_one("#why-view", WhyView).plain:
            break
    await pilot.press("1")
    for _ in range(50):
        await pilot.pause(0.05)
        if isinstance(app.screen, ABPicker):
            break
    await pilot.pause()
    assert isinstance(app.screen, ABPicker), [e.message for e in app.app_events]
    return app.screen


async def test_a_causes_ab_tests_the_levels_where_it_acts_with_the_runs_workload(
    tmp_path: Path
) -> None:
    """Issue 26.2: on cuda-graph-ceiling (ceiling 64, knee at 64, measured at 128) key 1 fills
    64,128 with the diagnosed run's workload, not the quick preset's 1,4,16, and says why."""
    db = tmp_path / "runs.db"
    workload = {"concurrency": [1, 4, 16, 32, 64, 128], "input_len": 512, "output_len": 256,
                "prompts_per_concurrency": 6, "flush_cache": False}
    _stored_run(db, workload)
    app = await _open_cause_ab(db)
    chosen: list[Any] = []
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.pause()
        picker = await _press_1(app, pilot)
        assert picker.query_one("#ab-concurrency", Input).value == "64,128"
        assert picker.query_one("#ab-preset", Select).value == "run 1"
        why = str(picker.query_one("#ab-why", Static).render())
        assert "levels 64,128" in why and "the knee at 64" in why, why
        assert "cuda-graph-ceiling was measured (128" in why, why
        assert "workload of run 1 (in 512, out 256, 6 prompts/level)" in why, why
        picker.dismiss = chosen.append  # type: ignore[method-assign,assignment]
        picker.action_start()
    request = chosen[0]
    assert request.concurrency == (64, 128)
    spec = request.spec(app.config.sweep(request.preset))
    assert (spec.input_len, spec.output_len, spec.prompts_per_concurrency) == (512, 256, 6)
    assert spec.concurrency == [64, 128] and spec.flush_cache is False


async def test_a_causes_ab_without_a_stored_workload_keeps_the_cause_levels(
    tmp_path: Path
) -> None:
    db = tmp_path / "runs.db"
    _stored_run(db)
    app = await _open_cause_ab(db)
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.pause()
        picker = await _press_1(app, pilot)
        assert picker.query_one("#ab-concurrency", Input).value == "64,128"
        assert "levels 64,128" in str(picker.query_one("#ab-why", Static).render())


def test_cause_levels_cover_the_knee_to_where_the_cause_was_measured() -> None:
    from console.app.suggest_ab import cause_levels

    run = [1, 4, 16, 64, 128, 256]
    assert cause_levels(128, "saturates", 64, 128, run) == (64, 128)
    assert cause_levels(256, "saturates", 64, 128, run) == (64, 128, 256)
    # Measured at the knee itself: the step above the knee is where the cause acts.
    assert cause_levels(64, "declines", 64, 128, run) == (64, 128)
    # Still scaling (no knee): the cause's level and the one below.
    assert cause_levels(128, "scaling", 256, None, run) == (64, 128)
    # Nothing to go by: where the run plateaus, its two highest levels.
    assert cause_levels(None, "insufficient", None, None, run) == (128, 256)
