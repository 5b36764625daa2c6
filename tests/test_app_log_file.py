"""`plateau --log FILE [--bench FILE ...]`: the console on a server log copied off a host, as
`plateau diagnose --log` reads it: its lines (through the real parser) in the log view, its
diagnosis in the Why view, and requested → effective in the header; a replay that runs
nothing. The logs are real ones from tests/data/logs/real/ (their sidecars say what they show)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from console.app.app import PlateauApp
from console.app.launch import log_app
from console.cli import _normalise_argv, main
from console.diagnose.client_files import read_client_files
from console.diagnose.log_diagnosis import diagnose_log, open_log
from widgets.header import PlateauHeader
from widgets.log_view import LogView
from widgets.why_view import WhyView

REAL = Path(__file__).parent / "data" / "logs" / "real"


async def _why_text(app: PlateauApp, pilot: Pilot[Any]) -> str:
    await pilot.press("W")
    for _ in range(40):
        await pilot.pause(0.05)
        views = app.screen.query("#why-view")
        if views and views.first(WhyView).plain:
            plain: str = views.first(WhyView).plain
            return plain
    raise AssertionError("the Why view showed nothing")


def _header(app: PlateauApp) -> str:
    return str(app.screen.query_one(PlateauHeader).render())


@pytest.mark.slow
async def test_a_real_log_opens_with_its_lines_and_its_diagnosis() -> None:
    path = REAL / "pr13023-graph-false-above-ceiling.log"
    app, session = log_app(str(path))
    expected = diagnose_log(open_log(str(path)), path=str(path)).diagnosis
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        view = app.screen.query_one(LogView)
        shown = [view.store.line(i) for i in range(view.store.visible_count)]
        assert len(shown) == 8 and "#running-req: 46" in shown[0]
        assert "log pr13023-graph-false-above-ceiling.log" in _header(app)
        assert app.unavailable_reason("sweep") == "this is a replay: it runs nothing on a host"
        why = await _why_text(app, pilot)
    assert f"knee: {expected.knee.sentence}" in why
    assert "log " + str(path) + ": 8 lines, 8 Decode" in why
    first = expected.causes[0].id if expected.causes else "No clear cause"
    assert first in why
    await session.close()


@pytest.mark.slow
async def test_the_why_view_names_the_cause_the_log_shows() -> None:
    slug = "mineru3470-rtx5090-eager-decode-v0.4.10"
    truth = json.loads((REAL / f"{slug}.truth.json").read_text())
    app, session = log_app(str(REAL / f"{slug}.log"))
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        why = await _why_text(app, pilot)
    assert truth["plateau_causes"] == ["eager-decode"]
    assert "1. eager-decode" in why
    assert "lacked: eager-decode: " in why  # no startup lines: what it could not tell
    await session.close()


@pytest.mark.slow
async def test_requested_vs_effective_in_the_header_and_the_why_view() -> None:
    # server_args asks cuda_graph_max_bs=8 (and max_running_requests=1); SGLang captures [1].
    app, session = log_app(str(REAL / "tianyang-qwen3-14b-tp2-offload-startup-mrr1.log"))
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        assert "graph max bs 8\u21921" in _header(app)
        why = await _why_text(app, pilot)
    assert "effective: --cuda-graph-max-bs-decode 8 \u2192 1" in why
    await session.close()


async def test_bench_files_give_the_client_side(tmp_path: Path) -> None:
    path = REAL / "pr13023-graph-false-above-ceiling.log"
    record = json.loads((Path(__file__).parent / "data" / "bench" / "generate-c4.jsonl")
                        .read_text().splitlines()[0])
    bench = tmp_path / "bench.jsonl"
    lines = []
    for concurrency, total in ((16, 2800.0), (32, 4600.0), (64, 4750.0)):
        record.pop("server_info", None)
        record.update(max_concurrency=concurrency, total_throughput=total,
                      output_throughput=total / 5, completed=concurrency * 5)
        lines.append(json.dumps(record))
    bench.write_text("\n".join(lines) + "\n")
    _app, session = log_app(str(path), [str(bench)])
    expected = diagnose_log(open_log(str(path)), read_client_files([str(bench)]))
    assert session.log_diagnosis is not None
    assert session.log_diagnosis.client == "bench_serving"
    assert session.log_diagnosis.diagnosis.knee == expected.diagnosis.knee


def test_a_missing_log_is_one_clear_line(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.log"
    assert main(["--log", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err == f"plateau: --log {missing}: no such file\n"


def test_log_options_route_to_the_console() -> None:
    assert _normalise_argv(["--log", "f.log"]) == ["console", "--log", "f.log"]
    assert _normalise_argv(["--config", "c.toml", "--log", "f.log", "--bench", "b.jsonl"]) == [
        "--config", "c.toml", "console", "--log", "f.log", "--bench", "b.jsonl"]
    assert _normalise_argv(["myhost"]) == ["console", "myhost"]


@pytest.mark.slow
async def test_the_clock_tick_survives_a_screen_whose_header_is_gone() -> None:
    # At exit Textual removes a screen's children before the screen: the 1 s tick that
    # landed in between raised NoMatches (seen once in CI), and so did a screen's re-render.
    app, session = log_app(str(REAL / "tianyang-qwen3-14b-tp2-offload-startup-mrr1.log"))
    async with app.run_test(size=(160, 45)) as pilot:
        await _why_text(app, pilot)
        screen = app.screen
        await screen.query_one(PlateauHeader).remove()
        app._tick()
        screen.render_host(app.active_state, None)  # type: ignore[attr-defined]
        await pilot.press("escape")
        await pilot.pause()
        await app.screen.query_one(PlateauHeader).remove()
        app._tick()
    await session.close()
