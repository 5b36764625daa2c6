"""The host-wide lease over a real sshd, between separate `plateau` processes: concurrent
starts leave exactly one server; a restart during another process's sweep is refused and
names the holder; the lease goes when its holder dies; --wait queues."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli_hosts import (
    finish,
    sim_processes,
    spawn_plateau,
    wait_for,
    write_sshd_config,
)
from tests.support.server_fixtures import free_port
from tests.support.sshd import Sshd

pytestmark = pytest.mark.sshd


def _kill(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)


@pytest.fixture
def box(sshd: Sshd, tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    state = tmp_path / "gpu-state.json"
    config = write_sshd_config(tmp_path / "config.toml", sshd, port=free_port(),
                               run_dir=tmp_path / "run", state_file=state)
    yield config, state
    for pid in sim_processes(state):
        os.killpg(os.getpgid(pid), signal.SIGKILL)


@pytest.mark.slow
def test_concurrent_starts_leave_exactly_one_server(box: tuple[Path, Path], tmp_path: Path) -> None:
    config, state = box
    starts = [spawn_plateau(tmp_path, "--config", str(config), "server", "start", "box")
              for _ in range(2)]
    results = [finish(p) for p in starts]
    codes = sorted(code for code, _ in results)
    assert codes == [0, 1], results
    assert len(sim_processes(state)) == 1  # issue 12 figure: servers running must be 1
    refusals = [text for code, text in results if code == 1]
    assert all("busy" in t or "already running" in t for t in refusals), refusals
    stop = spawn_plateau(tmp_path, "--config", str(config), "server", "stop", "box")
    assert finish(stop)[0] == 0
    assert sim_processes(state) == []


@pytest.mark.slow
def test_restart_during_a_sweep_is_refused_naming_the_holder(
    box: tuple[Path, Path], tmp_path: Path
) -> None:
    config, state = box
    assert finish(spawn_plateau(tmp_path, "--config", str(config), "server", "start",
                                 "box"))[0] == 0
    sweep = spawn_plateau(tmp_path, "--config", str(config), "sweep", "box", "--preset",
                          "long", "--no-flush")
    lease = tmp_path / "run" / "lease"
    try:
        wait_for(lambda: lease.exists() and "sweep" in lease.read_text(), "the sweep's lease")
        code, text = finish(spawn_plateau(tmp_path, "--config", str(config), "server",
                                           "restart", "box"))
        assert code == 1, text
        assert "busy" in text and "sweep sim" in text and f"pid {sweep.pid}" in text, text
        # what the lease covers, said in the refusal: this account's run dir
        assert f"this account's run dir {tmp_path / 'run'}" in text, text
        server = sim_processes(state)
        assert len(server) == 1  # untouched
        waiter = spawn_plateau(tmp_path, "--config", str(config), "server", "stop", "box",
                               "--wait")
        time.sleep(0.5)  # not a sync point: the assertion below holds at any time
        assert waiter.poll() is None and sim_processes(state) == server
    finally:
        _kill(sweep)  # the holder dies: the host-side lock goes with it
    code, text = finish(waiter)
    assert code == 0, text
    assert sim_processes(state) == []
