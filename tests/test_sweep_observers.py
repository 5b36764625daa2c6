"""A console sweep (and A/B, and restart) observes the host through the session's own
observers: while it measures, the host runs exactly one GPU agent and one log follower (counted
on the host, over a real sshd), and the run's stored evidence is what those observers delivered
(the log's startup and batch lines, the agent's samples and topology, the session's /metrics
scrapes); a restart's startup steps are read from the session's follower."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from console.config_models import HostConfig
from console.jobs.ab_models import ABRequest
from console.session.events import ServerUpdate, SessionEvent
from console.session.tune_control import HostSweeps
from console.store.db import RunStore
from tests.support.app_fixtures import wait_until

pytestmark = pytest.mark.sshd

# Long enough that the sweep's evidence sources are running while the host is counted.
SLOW_SWEEP = {"concurrency": [1, 2, 4], "input_len": 16, "output_len": 48,
              "prompts_per_concurrency": 3, "flush_cache": False}


def _host_programs(root: Path) -> tuple[int, int]:
    """(GPU agents, log followers) observing this test's host: the interpreters running an
    installed program (console/host/process_ops.py) whose arguments name files under `root`
    (the `sh -c ... setsid` wrapper that starts each one is not counted)."""
    ps = subprocess.run(["ps", "-eww", "-o", "args="], capture_output=True, text=True,
                        check=True)
    programs = [args[1] for line in ps.stdout.splitlines()
                if str(root) in line and len(args := line.split()) > 1]
    return (sum("/plateau-gpu-agent-" in p for p in programs),
            sum("/plateau-follow-" in p for p in programs))


def _over_ssh(live_console: Any, sshd: Any, name: str) -> Any:
    """The live console on a simulated host reached over the real sshd, sweeping slowly."""
    host = HostConfig(
        name=name, address="127.0.0.1", port=sshd.port, user=sshd.user,
        identity_files=[str(sshd.client_key)], known_hosts_file=str(sshd.known_hosts),
        python=sys.executable,
    )
    return live_console(host, sweeps={"default": SLOW_SWEEP})


async def _launched(pilot: Any, live: Any) -> None:
    """Until the launch has ended with a ready server and the agent is sampling."""
    state = live.session.state
    await wait_until(pilot, lambda: state.server_state == "ready", "server ready", 60)
    await wait_until(pilot, lambda: state.gpu_sample is not None, "GPU samples", 30)
    await wait_until(pilot, lambda: not live.session.restart_running, "the launch to end", 30)


async def test_a_console_sweep_runs_one_agent_and_one_follower(
    live_console: Any, sshd: Any
) -> None:
    live = _over_ssh(live_console, sshd, "one-observer")
    app, session, state = live.app, live.session, live.session.state
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: state.server_state == "ready", "server ready", 60)
        await wait_until(pilot, lambda: state.gpu_sample is not None, "GPU samples", 30)
        await wait_until(pilot, lambda: state.server_stats is not None
                         and state.server_stats.source == "metrics", "a /metrics scrape", 30)
        await session.start_sweep("default")
        await wait_until(pilot, lambda: state.sweep.running and state.sweep.points,
                         "the sweep's first step", 60)
        seen: set[tuple[int, int]] = set()
        while state.sweep.running:
            seen.add(await asyncio.to_thread(_host_programs, live.root))
            await pilot.pause(0.1)
        assert seen == {(1, 1)}, seen
        assert state.sweep.last_ok, state.sweep.detail
    with RunStore(live.root / "runs.db") as store:
        (run,) = store.list_runs()
        evidence = store.load_evidence(run.id)
    assert evidence is not None
    assert set(evidence.sources) == {"client", "gpu", "log", "metrics"}
    assert evidence.startup.capture_bs  # the log's head, read once at the sweep's start
    assert evidence.topology.num_gpus  # the topology the session's agent sent at its start
    steps = evidence.steps
    assert len(steps) == 3 and all(s.decode_rows and s.gpu for s in steps)
    assert sum(len(s.metrics) for s in steps) > 0


async def test_a_console_restart_reads_the_sessions_follower(
    live_console: Any, sshd: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A restart's startup phases come from the session's own log follower (it follows
    current.log onto the new launch's file): the host runs one follower throughout, and the
    startup steps the lifecycle read from those lines are reported as the server's state."""
    live = _over_ssh(live_console, sshd, "one-observer-restart")
    app, session, state = live.app, live.session, live.session.state
    async with app.run_test(size=(160, 48)) as pilot:
        await _launched(pilot, live)
        details: list[str] = []
        emit = session.emit

        def recording(event: SessionEvent) -> None:  # what the restart reports, in order
            if isinstance(event, ServerUpdate):
                details.append(event.detail)
            emit(event)

        monkeypatch.setattr(session, "emit", recording)
        await session.restart("triton-moe")
        followers: set[int] = set()
        while session.restart_running:
            followers.add((await asyncio.to_thread(_host_programs, live.root))[1])
            await pilot.pause(0.05)
        assert state.server_state == "ready" and state.profile == "triton-moe", details
        assert followers == {1}, followers
        # the lifecycle saw the new log's startup lines: its steps after the launch, in order
        steps = [d.split(":")[0] for d in details if ":" in d]
        assert steps[:2] == ["server args", "load weights"] and "CUDA graphs" in steps, details
        assert session.startup_tap.open_feeds == 0  # the launch's feed was closed


@pytest.mark.slow
async def test_a_console_ab_runs_one_agent_and_one_follower(live_console: Any, sshd: Any) -> None:
    """The console's A/B takes its evidence from the session's observers as its sweep does:
    while either side is measured the host runs one agent and one follower, and each side's
    stored run has the evidence those observers delivered."""
    live = _over_ssh(live_console, sshd, "one-observer-ab")
    app, session, state = live.app, live.session, live.session.state
    async with app.run_test(size=(160, 48)) as pilot:
        await _launched(pilot, live)
        await session.start_ab(ABRequest("cutlass-moe", "triton-moe", repeats=1))
        await wait_until(pilot, lambda: state.ab is not None and state.ab.running, "A/B", 30)
        seen: dict[str, set[tuple[int, int]]] = {}
        assert state.ab is not None
        while state.ab.running:
            side = state.ab.side
            if side is not None and state.sweep.running and state.sweep.points:
                counted = await asyncio.to_thread(_host_programs, live.root)
                if state.ab.side == side and state.sweep.running:  # still that side's sweep
                    seen.setdefault(side, set()).add(counted)
            await pilot.pause(0.1)
        assert state.ab.stage == "done", state.ab.message
        assert seen == {"A": {(1, 1)}, "B": {(1, 1)}}, seen
    with RunStore(live.root / "runs.db") as store:
        runs = store.list_runs()
        assert len(runs) == 2
        for run in runs:
            evidence = store.load_evidence(run.id)
            assert evidence is not None
            assert {"client", "gpu", "log"} <= set(evidence.sources), evidence.sources
            assert evidence.topology.num_gpus  # the session's agent's topology, teed
            assert evidence.steps and all(s.decode_rows and s.gpu for s in evidence.steps)


@pytest.mark.slow
async def test_a_console_tune_sweep_runs_one_agent_and_one_follower(
    live_console: Any, sshd: Any
) -> None:
    """The Tune view's sweeps (the tune job's HostBench from the session) take the session's
    taps too: while one measures, the host runs one agent and one follower, and its stored run
    has the evidence those observers delivered."""
    live = _over_ssh(live_console, sshd, "one-observer-tune")
    app, session = live.app, live.session
    async with app.run_test(size=(160, 48)) as pilot:
        await _launched(pilot, live)
        with RunStore(live.root / "runs.db") as store:
            bench = session.tune_bench(store)
            bench.on_sweep_event = HostSweeps(session)  # as the Tune view's job has it
            profile = live.config.profiles["cutlass-moe"]
            spec = live.config.sweeps["default"]
            measuring = asyncio.ensure_future(bench.sweep(
                "cutlass-moe", profile, spec, label="tune base", run_id=None, repeat_base=0,
                finish=True))
            seen: set[tuple[int, int]] = set()
            running = False
            while not measuring.done():
                seen.add(await asyncio.to_thread(_host_programs, live.root))
                running = running or session.state.sweep.running
                await pilot.pause(0.1)
            outcome = measuring.result()
            assert seen == {(1, 1)}, seen
            assert outcome.run_id is not None and len(outcome.steps) == 3
            evidence = store.load_evidence(outcome.run_id)
    # its sweep ran as the host's, step by step: what the dashboard's chart draws
    complete = session.state.last_complete
    assert running and not session.state.sweep.running
    assert complete is not None and complete.run_id == str(outcome.run_id)
    assert complete.points == list(outcome.steps)
    assert evidence is not None
    assert {"client", "gpu", "log"} <= set(evidence.sources), evidence.sources
    assert evidence.topology.num_gpus  # the session's agent's topology, teed
    assert evidence.steps and all(s.decode_rows and s.gpu for s in evidence.steps)
