"""Every number from the host is untrusted: NaN, infinities, overflowing and negative values
in log lines, /metrics, GPU samples and server status reach the running app and it neither
crashes nor draws them as data; it shows them as what they are."""

from __future__ import annotations

import asyncio
import json
import math
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from console.app.app import PlateauApp
from console.config_models import HostConfig
from console.gpu.models import GpuSample
from console.logs.assembler import parse_lines
from console.logs.metrics import parse_metrics
from console.logs.server_stats import StatsAggregator
from console.session.events import (
    ConnectionChanged,
    GpuUpdate,
    LogBatch,
    ServerStats,
    SweepDone,
    SweepPointDone,
    TopologyUpdate,
)
from console.session.recording import Recorder, read_recording
from console.session.replay import ReplaySession
from tests.support.app_fixtures import app_config, fixed_clock, gpu_header
from tests.support.hostile import (
    HOSTILE_FLOATS,
    HOSTILE_INTS,
    decode_line,
    hostile_events,
    hostile_gpu_fields,
    hostile_log_lines,
    hostile_metrics,
    hostile_step,
)


async def test_hostile_numbers_never_crash_the_console(app_factory: Any) -> None:
    loaded = app_config(["demo"])
    session = ReplaySession.from_events(
        loaded.config.hosts[0], hostile_events("demo", gpu_header()), clock=fixed_clock)
    app = PlateauApp(loaded, [session], clock=fixed_clock, tick_seconds=None)
    async with app.run_test(size=(140, 44)) as pilot:
        for _ in range(6):
            await pilot.pause(0.05)
        for key in ("W", "escape", "t", "escape", "v", "m", "m", "z", "z"):
            await pilot.press(key)
            await pilot.pause(0.05)
        assert app.return_value is None and app.is_running
    assert app._exception is None


def test_histories_hold_only_drawable_numbers() -> None:
    aggregator = StatsAggregator()
    aggregator.add_events(parse_lines(hostile_log_lines()))
    snap = aggregator.snapshot()
    for history in (snap.gen_history, snap.running_history, snap.queue_history,
                    snap.usage_history):
        assert history, "the good lines still count"
        assert all(math.isfinite(v) and v >= 0 for v in history), history


def test_latest_hostile_value_is_shown_as_such() -> None:
    aggregator = StatsAggregator()
    aggregator.add_events(parse_lines([decode_line("2026-03-14 12:00:01", "8", "nan", "inf")]))
    snap = aggregator.snapshot()
    assert snap.token_usage is not None and math.isnan(snap.token_usage)


def test_a_recording_keeps_hostile_numbers_and_is_private(tmp_path: Path) -> None:
    """`plateau record` once died on the first NaN (strict JSON) and wrote files 0644."""
    path = tmp_path / "r.jsonl"
    path.write_text("old\n")
    path.chmod(0o644)
    recorder = Recorder(path, [HostConfig(name="demo", local=True)])
    events = hostile_events("demo", gpu_header())
    for event in events:
        recorder.write(event)
    recorder.close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    text = path.read_text()
    for line in text.splitlines():  # strict JSON (no NaN/Infinity tokens): other tools read it
        json.loads(line, parse_constant=_refuse)
    recording = read_recording(path)
    assert len(recording.events) == len(events)
    stats = [r.event.stats for r in recording.events if isinstance(r.event, ServerStats)]
    assert any(s.token_usage is not None and math.isinf(s.token_usage) for s in stats)


def _refuse(token: str) -> None:
    raise AssertionError(f"non-standard JSON constant {token}")


_NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([float("nan"), float("inf"), -float("inf"), 1e300, -1.0, 0.0]),
)
_SPELLED = st.one_of(
    st.sampled_from(HOSTILE_FLOATS + HOSTILE_INTS),
    _NUMBERS.map(repr),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
)


@pytest.mark.slow
@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(spelled=st.lists(_SPELLED, min_size=4, max_size=12),
       numbers=st.lists(_NUMBERS, min_size=3, max_size=6))
def test_property_any_host_number_reaches_the_app_without_harm(
        spelled: list[str], numbers: list[float]) -> None:
    """Host numbers drawn at random, spelled into log lines and /metrics and put in GPU
    samples and bench results, go through the real parsers into the running app."""
    host = "demo"
    lines = hostile_log_lines(tuple(spelled), tuple(s for s in spelled if s.lstrip("-").isdigit()))
    log = parse_lines(lines)
    aggregator = StatsAggregator()
    aggregator.add_events(log)
    events: list[Any] = [ConnectionChanged(host, "connected"), TopologyUpdate(host, gpu_header()),
                         LogBatch(host, tuple(log)), ServerStats(host, aggregator.snapshot())]
    for value in spelled:
        try:
            aggregator.add_metrics(parse_metrics(hostile_metrics(value)))
        except ValueError:
            continue  # a page Prometheus's parser refuses is a failed scrape, not a number
        events.append(ServerStats(host, aggregator.snapshot()))
    for seq, number in enumerate(numbers, start=1):
        gpus = [{"index": i, "name": "GPU", **hostile_gpu_fields(number)} for i in range(8)]
        events.append(GpuUpdate(host, GpuSample.model_validate(
            {"seq": seq, "t": 1.0, "cost_ms": number, "gpus": gpus})))
        events.append(SweepPointDone(host, "r1", hostile_step(seq - 1, 2**seq, number)))
    events.append(SweepDone(host, "r1", True, "done"))
    asyncio.run(_run_app(events))


async def _run_app(events: list[Any]) -> None:
    loaded = app_config(["demo"])
    session = ReplaySession.from_events(loaded.config.hosts[0], events, clock=fixed_clock)
    app = PlateauApp(loaded, [session], clock=fixed_clock, tick_seconds=None)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.05)
        for key in ("v", "m", "z", "z"):
            await pilot.press(key)
        await pilot.pause(0.05)
        assert app.is_running
    assert app._exception is None


@settings(max_examples=25, deadline=None)
@given(value=st.one_of(_NUMBERS, st.integers(min_value=-(10**30), max_value=10**30),
                       st.sampled_from(["nan", "1e400", "-1", "9" * 400])))
def test_property_a_hostile_server_json_is_refused_not_raised(value: Any) -> None:
    """server.json is written on the host (anyone with the account can edit it): every numeric
    field with a hostile value is read back as no record or a valid one, never an exception."""
    from console.server.records import LaunchRecord

    for field_name in ("pid", "pgid", "port", "start_ticks"):
        data = {"pid": 10, "pgid": 10, "port": 30000, "profile": "p", "argv": [],
                "gpu_baseline_mib": [value], field_name: value}
        text = json.dumps(data, allow_nan=True)
        try:
            record = LaunchRecord.model_validate_json(text)
        except ValueError:
            continue  # lifecycle.read_record: an unreadable record is no record
        number = getattr(record, field_name)
        assert isinstance(number, int) and 0 <= number < 1 << 63
