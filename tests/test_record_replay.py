"""Record and replay: a session's event feed to a file and back into the console.

The round trip records the real console on the simulated host (real sim, real lifecycle),
replays the file into a fresh app, and the replay shows the same GPUs, log and server strip."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from console.app.launch import record_sessions, replay_app
from console.app.screenshot import export_text
from console.cli import main
from console.config_models import HostConfig
from console.errors import UsageError
from console.session.events import ConnectionChanged, Problem
from console.session.recording import Recorder, read_recording
from console.session.replay import ReplaySession
from tests.support.app_fixtures import ab_events, demo_events, server_stats, wait_until

SIZE = (140, 44)


def test_every_event_type_survives_a_recording(tmp_path: Path) -> None:
    events = demo_events() + ab_events()
    path = tmp_path / "r.jsonl"
    recorder = Recorder(path, [HostConfig(name="demo", local=True)])
    for event in events:
        recorder.write(event)
    recorder.close()
    recording = read_recording(path)
    assert [h.name for h in recording.hosts] == ["demo"]
    assert [r.event for r in recording.events] == events
    times = [r.at_s for r in recording.events]
    assert times == sorted(times)


def test_a_bad_line_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "r.jsonl"
    recorder = Recorder(path, [HostConfig(name="demo", local=True)])
    recorder.write(demo_events()[0])
    recorder.close()
    with path.open("a") as handle:
        handle.write(json.dumps({"t": 1.0, "type": "GpuUpdate", "event": {"host": "demo"}}) + "\n")
    assert main(["replay", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"plateau: {path}:3: bad event line (sample") and err.count("\n") == 1
    (tmp_path / "x.jsonl").write_text("{}\n")  # not a recording at all
    assert main(["replay", str(tmp_path / "x.jsonl")]) == 2
    assert "x.jsonl:1: not a plateau recording" in capsys.readouterr().err


def test_a_crafted_recording_cannot_reach_the_terminal(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    recorder = Recorder(path, [HostConfig(name="demo", local=True, identity_files=["~/.ssh/k"])])
    recorder.write(Problem("demo", "log", "fine"))
    recorder.close()
    text = path.read_text().replace("fine", "\\u001b]0;pwned\\u0007\\u001b[2J")
    assert "identity_files" not in text and ".ssh/k" not in text
    path.write_text(text)
    (recorded,) = read_recording(path).events
    assert isinstance(recorded.event, Problem) and "\x1b" not in recorded.event.message


async def test_replay_plays_at_the_recorded_pace(tmp_path: Path) -> None:
    """At speed 0 everything is there at once; at speed 1 a later event waits its turn."""
    host = HostConfig(name="demo", local=True)
    path = tmp_path / "r.jsonl"
    recorder = Recorder(path, [host])
    for event in demo_events()[:2]:
        recorder.write(event)
    recorder.close()
    timeline = read_recording(path).events
    late = [timeline[0], type(timeline[1])(at_s=3600.0, event=timeline[1].event)]
    slow = ReplaySession.from_recording(host, late, speed=1.0)
    await slow.start()
    await _until(lambda: slow.state.connection == "connected")
    assert slow.state.server_state == "unknown" and not slow.finished
    await slow.close()
    fast = ReplaySession.from_recording(host, late, speed=0)
    await fast.start()
    await _until(lambda: fast.finished)
    assert fast.state.server_state == "ready"
    await fast.close()


async def test_a_recording_with_the_former_event_names_replays(tmp_path: Path) -> None:
    """Recordings written before the session's ServerStats/ServerStatus events were renamed
    (StatsUpdate/ServerUpdate) name those types: they still replay, as the new types."""
    host = HostConfig(name="demo", local=True)
    path = tmp_path / "old.jsonl"
    recorder = Recorder(path, [host])
    for event in demo_events():
        recorder.write(event)
    recorder.close()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    former = {"StatsUpdate": "ServerStats", "ServerUpdate": "ServerStatus"}
    for line in lines[1:]:
        line["type"] = former.get(line["type"], line["type"])
    assert {"ServerStats", "ServerStatus"} <= {line.get("type") for line in lines}
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    replay = ReplaySession.from_recording(host, read_recording(path).events, speed=0)
    await replay.start()
    await _until(lambda: replay.finished)
    assert replay.state.server_state == "ready" and replay.state.profile == "cutlass-moe"
    assert replay.state.server_stats is not None
    assert replay.state.server_stats.gen_throughput == server_stats().gen_throughput
    await replay.close()


async def _until(condition: Callable[[], bool]) -> None:
    async with asyncio.timeout(30):
        while not condition():
            await asyncio.sleep(0.01)


def _region(app: Any, selector: str) -> list[str]:
    """The rows of the screen a widget covers, as plain text."""
    lines = export_text(app).splitlines()
    region = app.screen.query_one(selector).region
    rows = lines[region.y : region.y + region.height]
    return [row[region.x : region.x + region.width].rstrip() for row in rows]


PANELS = ("#gpu-view", "#server-view", "#log-view")


async def test_record_the_demo_then_replay_shows_the_same_screen(
    live_console: Any, tmp_path: Path
) -> None:
    live = live_console()
    path = tmp_path / "incident.jsonl"
    recorder = record_sessions(path, [live.session])  # what `--record FILE` does
    assert recorder is not None
    app, state = live.app, live.session.state
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: state.server_state == "ready", "server ready", 60)
        await wait_until(pilot, lambda: state.gpu_sample is not None
                         and state.server_stats is not None
                         and any("fired up and ready" in e.text for e in state.log),
                         "GPUs, stats and the ready line", 60)
        await live.session.close()  # the feed ends: nothing arrives after the last record
        await wait_until(pilot, lambda: live.session._queue.empty(), "the app to drain", 30)
        await pilot.pause()
        recorder.close()
        live_panels = {selector: _region(app, selector) for selector in PANELS}

    recording = read_recording(path)
    assert recording.events, "nothing was recorded"
    replayed, sessions = replay_app(recording, speed=0)
    replayed.tick_seconds = None
    async with replayed.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: all(s.finished for s in sessions), "the replay")
        await wait_until(pilot, lambda: sessions[0]._queue.empty(), "the app to drain")
        await pilot.pause()
        # A loaded machine lays out and scrolls the panels a few frames after the last event:
        # give the screen time to settle on what the replay fed it, then compare.
        with contextlib.suppress(AssertionError):
            await wait_until(pilot, lambda: all(_region(replayed, s) == live_panels[s]
                                                for s in PANELS), "the same screen", 20)
        for selector in PANELS:
            assert _region(replayed, selector) == live_panels[selector], selector
        assert replayed.active_state.server_state == "ready"
        gpus = replayed.active_state.gpu_sample
        assert gpus is not None and len(gpus.gpus) == 8


def test_plateau_record_demo_headless(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`plateau record --demo`: a valid recording of the demo host, and a clean exit."""
    out = tmp_path / "demo.jsonl"
    assert main(["record", "--demo", "--seed", "1", "--out", str(out), "--seconds", "2"]) == 0
    assert f"event(s) of demo to {out}" in capsys.readouterr().err
    recording = read_recording(out)
    assert [h.name for h in recording.hosts] == ["demo"]
    first = recording.events[0].event
    assert first == ConnectionChanged("demo", "connecting")
    config = tmp_path / "c.toml"
    config.write_text('[[hosts]]\nname = "box"\nlocal = true\n')
    assert main(["--config", str(config), "record", "nohost", "--out",
                 str(tmp_path / "x.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "nohost" in err and err.count("\n") == 1


def test_a_torn_last_line_is_left_out_and_said(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    recorder = Recorder(path, [HostConfig(name="demo", local=True)])
    for event in demo_events()[:3]:
        recorder.write(event)
    recorder.close()
    text = path.read_text()
    path.write_text(text + text.splitlines()[-1][:40])  # killed mid-write: no newline
    recording = read_recording(path)
    assert len(recording.events) == 3
    assert recording.notes == ["line 5 was cut off mid-write and left out"]


@pytest.mark.parametrize("junk", [
    b"\xff\xfe\x00garbage\x9b" * 1000,
    b"[" * 100_000 + b"]" * 100_000,
])
def test_junk_files_are_one_clear_error(tmp_path: Path, junk: bytes,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "junk.jsonl"
    path.write_bytes(junk + b"\n")
    assert main(["replay", str(path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "not a plateau recording" in err and err.count("\n") == 1


def test_deep_event_line_and_event_bound(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    recorder = Recorder(path, [HostConfig(name="demo", local=True)])
    for _ in range(5):
        recorder.write(demo_events()[0])
    recorder.close()
    assert len(read_recording(path, max_events=3).events) == 3
    assert "played the first 3 events" in read_recording(path, max_events=3).notes[0]
    with path.open("a") as handle:
        handle.write('{"t": 1, "type": "Problem", "event": ' + "[" * 100_000 + "]" * 100_000
                     + "}\n")
    with pytest.raises(UsageError, match=r"r\.jsonl:7: bad event line"):
        read_recording(path)
