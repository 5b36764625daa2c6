"""The host lease across an SSH drop of its holder (issue 25 item 4), over a real sshd between
separate `plateau` processes: a drop mid-start or mid-sweep leaves the lease with its holder
for the grace (a second process is refused, told the holder is reconnecting) and the holder
carries on once reconnected; a holder that stays away past the grace loses the lease, which
is then free, and says so when it comes back.

The holder is kept from reconnecting by stopping it (SIGSTOP) before its connections are
dropped, so every step here waits on a state, never on the machine's speed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Callable, Iterator
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
        os.killpg(process.pid, signal.SIGCONT)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)


def _record(run_dir: Path) -> dict[str, object]:
    try:
        data = json.loads((run_dir / "lease").read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _held_for(run_dir: Path, purpose: str) -> Callable[[], bool]:
    return lambda: purpose in str(_record(run_dir).get("purpose", ""))


def _box(sshd: Sshd, tmp_path: Path, grace: float, startup: float = 0.0) -> tuple[Path, Path]:
    state = tmp_path / "gpu-state.json"
    config = write_sshd_config(tmp_path / "config.toml", sshd, port=free_port(),
                               run_dir=tmp_path / "run", state_file=state,
                               startup_seconds=startup, lease_grace_s=grace)
    return config, state


@pytest.fixture
def cleanup_sims() -> Iterator[Callable[[Path], None]]:
    states: list[Path] = []
    yield states.append
    for state in states:
        for pid in sim_processes(state):
            os.killpg(os.getpgid(pid), signal.SIGKILL)


def _drop_while_stopped(sshd: Sshd, holder: subprocess.Popen[str]) -> None:
    """The holder's connections drop while it cannot reconnect (it is stopped)."""
    os.killpg(holder.pid, signal.SIGSTOP)
    assert sshd.drop_connections() >= 1


def _refused_as_reconnecting(tmp_path: Path, config: Path, state: Path, run_dir: Path,
                             purpose: str) -> None:
    wait_for(lambda: bool(_record(run_dir).get("reconnecting_since")),
              "the host to notice the holder's connection is gone")
    servers = sim_processes(state)
    code, text = finish(spawn_plateau(tmp_path, "--config", str(config), "server",
                                       "restart", "box"))
    assert code == 1, text
    assert "busy" in text and purpose in text and "reconnecting" in text, text
    assert sim_processes(state) == servers  # the refused restart touched nothing


def test_drop_mid_start_keeps_the_lease_for_the_holder(
    sshd: Sshd, tmp_path: Path, cleanup_sims: Callable[[Path], None]
) -> None:
    config, state = _box(sshd, tmp_path, grace=120.0, startup=4.0)
    cleanup_sims(state)
    run_dir = tmp_path / "run"
    start = spawn_plateau(tmp_path, "--config", str(config), "server", "start", "box")
    try:
        wait_for(_held_for(run_dir, "start sim"), "the start's lease")
        # launched and recorded: the drop comes while it follows the startup
        wait_for(lambda: (run_dir / "server.json").exists(), "the launch record")
        _drop_while_stopped(sshd, start)
        _refused_as_reconnecting(tmp_path, config, state, run_dir, "start sim")
        os.killpg(start.pid, signal.SIGCONT)
        code, text = finish(start)
        assert code == 0, text  # it reconnected, took its lease back and finished the start
        assert "lost the host lease" not in text, text
        assert _record(run_dir).get("reattached_at"), _record(run_dir)
        assert len(sim_processes(state)) == 1
    finally:
        _kill(start)


def _sweep_then_drop(sshd: Sshd, tmp_path: Path, config: Path,
                     run_dir: Path) -> subprocess.Popen[str]:
    """Start the server, start a long sweep, and once it holds the lease stop it and drop
    its connections (the sweep process is returned, SIGSTOPped)."""
    assert finish(spawn_plateau(tmp_path, "--config", str(config), "server", "start",
                                "box"))[0] == 0
    sweep = spawn_plateau(tmp_path, "--config", str(config), "sweep", "box", "--preset",
                          "long", "--no-flush")
    try:
        wait_for(_held_for(run_dir, "sweep sim"), "the sweep's lease")
        _drop_while_stopped(sshd, sweep)
    except BaseException:
        _kill(sweep)
        raise
    return sweep


def test_drop_mid_sweep_keeps_the_lease_for_the_holder(
    sshd: Sshd, tmp_path: Path, cleanup_sims: Callable[[Path], None]
) -> None:
    config, state = _box(sshd, tmp_path, grace=120.0)
    cleanup_sims(state)
    run_dir = tmp_path / "run"
    sweep = _sweep_then_drop(sshd, tmp_path, config, run_dir)
    try:
        _refused_as_reconnecting(tmp_path, config, state, run_dir, "sweep sim")
        os.killpg(sweep.pid, signal.SIGCONT)
        wait_for(lambda: bool(_record(run_dir).get("reattached_at")),
                  "the sweep to take its lease back")
        assert not _record(run_dir).get("reconnecting_since")
        assert sweep.poll() is None  # still sweeping, still holding
        code, text = finish(spawn_plateau(tmp_path, "--config", str(config), "server",
                                           "restart", "box"))
        assert code == 1 and "busy" in text and "sweep sim" in text, text
        assert "reconnecting" not in text, text
    finally:
        _kill(sweep)


def test_a_holder_away_past_the_grace_loses_the_lease_and_says_so(
    sshd: Sshd, tmp_path: Path, cleanup_sims: Callable[[Path], None]
) -> None:
    config, state = _box(sshd, tmp_path, grace=2.0)
    cleanup_sims(state)
    run_dir = tmp_path / "run"
    sweep = _sweep_then_drop(sshd, tmp_path, config, run_dir)
    try:
        wait_for(lambda: bool(_record(run_dir).get("expired_at")), "the grace to expire")
        # the lease is free: another process takes it (and finds the server running)
        code, text = finish(spawn_plateau(tmp_path, "--config", str(config), "server",
                                           "start", "box"))
        assert code == 1 and "already running" in text and "busy" not in text, text
        os.killpg(sweep.pid, signal.SIGCONT)
        code, text = finish(sweep)
        assert code == 1, text
        assert "lost the host lease" in text and "stopped" in text, text
        assert "taken by start sim" in text or "grace of 2 s" in text, text
    finally:
        _kill(sweep)
