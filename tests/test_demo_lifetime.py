"""A demo server dies with its owner: SIGKILL of `plateau sweep --demo` mid-sweep, or of
`plateau demo` in a terminal, leaves no simulated server and no temp dir behind (the host-side
guard on a pipe from the owner). `plateau demo` starts its guard alongside the console and
waits for it only before the server starts: without a guard, no server."""

from __future__ import annotations

import asyncio
import fcntl
import os
import pty
import signal
import struct
import subprocess
import termios
import threading
import time
from pathlib import Path

import pytest

from console.demo import DEMO_HOST, demo_profile, temp_demo
from console.host.local import LocalTransport
from console.server.guard import OwnerGuard
from console.session.events import Problem
from console.session.service import HostSession
from tests.support.cli_hosts import cli_env, plateau_argv, wait_for


def _sims_under(directory: Path) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if state != "Z" and b"console.sim" in argv and str(directory).encode() in argv:
            found.append(int(entry.name))
    return found


def _killed_owner_takes_the_sim_and_temp_dir(tmp_path: Path, argv: tuple[str, ...],
                                             sig: int) -> None:
    """Start `plateau ARGV` on the demo, wait for its server to be ready, send `sig`: the
    host-side guard must take the simulated server and the temp run dir."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**cli_env(tmp_path), "TMPDIR": str(temp)}
    owner = subprocess.Popen(plateau_argv(*argv), env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for(lambda: bool(_sims_under(temp)) and any(
            (d / "server.json").exists() and '"ready"' in (d / "server.json").read_text()
            for d in temp.glob("plateau-demo-*")), "the demo server", 120)
        run_dirs = list(temp.glob("plateau-demo-*"))
        assert run_dirs and _sims_under(temp)
        os.kill(owner.pid, sig)  # SIGKILL: no cleanup of its own can run
        owner.wait(30)
        wait_for(lambda: not _sims_under(temp), "the simulated server to go", 60)
        wait_for(lambda: not any(d.exists() for d in run_dirs), "the temp run dir to go", 30)
    finally:
        if owner.poll() is None:
            os.killpg(owner.pid, signal.SIGKILL)
        for pid in _sims_under(temp):
            os.killpg(os.getpgid(pid), signal.SIGKILL)


@pytest.mark.slow
def test_sigkill_of_sweep_demo_takes_the_sim_and_temp_dir(tmp_path: Path) -> None:
    _killed_owner_takes_the_sim_and_temp_dir(
        tmp_path, ("sweep", "--demo", "--concurrency", "1", "--step-seconds", "600",
                   "--no-flush"), signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_kill_of_ab_demo_takes_the_sim_and_temp_dir(tmp_path: Path, sig: int) -> None:
    """`plateau ab --demo` once orphaned its simulator on SIGTERM (3/3) and SIGKILL (2/2)."""
    _killed_owner_takes_the_sim_and_temp_dir(
        tmp_path, ("ab", "--demo", "--concurrency", "1", "--repeats", "1"), sig)


def test_usage_errors_of_demo_commands_leave_no_temp_dir(tmp_path: Path) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**cli_env(tmp_path), "TMPDIR": str(temp)}
    for argv in (("ab", "--demo", "--a", "no-such-profile"),
                 ("ab", "--demo", "--preset", "no-such-preset"),
                 ("sweep", "--demo", "--preset", "no-such-preset")):
        done = subprocess.run(plateau_argv(*argv), env=env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert list(temp.iterdir()) == [], (argv, list(temp.iterdir()))


def _drain(fd: int) -> None:
    """Read the terminal's output away (a full pty would block the app's writes)."""
    with open(fd, "rb", buffering=0, closefd=False) as master:
        while True:
            try:
                if not master.read(65536):
                    return
            except OSError:
                return


@pytest.mark.slow
def test_sigkill_of_plateau_demo_takes_the_sim_and_temp_dir(tmp_path: Path) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**cli_env(tmp_path), "TMPDIR": str(temp), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "TERM": "xterm-256color"}
    master, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 48, 160, 0, 0))
    owner = subprocess.Popen(
        plateau_argv("demo", "--seed", "1", "--startup-seconds", "0"), env=env,
        stdin=terminal, stdout=terminal, stderr=terminal, start_new_session=True,
    )
    os.close(terminal)
    threading.Thread(target=_drain, args=(master,), daemon=True).start()
    try:
        wait_for(lambda: bool(_sims_under(temp)) and any(
            (d / "server.json").exists() and '"ready"' in (d / "server.json").read_text()
            for d in temp.glob("plateau-demo-*")), "the demo server", 120)
        run_dirs = list(temp.glob("plateau-demo-*"))
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait(10)
        wait_for(lambda: not _sims_under(temp), "the simulated server to go", 60)
        wait_for(lambda: not any(d.exists() for d in run_dirs), "the temp run dir to go", 30)
        assert not list(temp.glob("plateau-local-*"))  # nothing else of ours left in TMPDIR
    finally:
        if owner.poll() is None:
            os.killpg(owner.pid, signal.SIGKILL)
        for pid in _sims_under(temp):
            os.killpg(os.getpgid(pid), signal.SIGKILL)
        os.close(master)


async def test_no_server_starts_when_the_guard_does_not(tmp_path: Path) -> None:
    """The session awaits the guard before its server launch: a guard that cannot start
    (its interpreter exits at once) means a clear problem and no server."""
    config, run_dir = temp_demo(1, 0.0, tmp_path / "run")
    host = config.host(DEMO_HOST)
    broken = host.model_copy(update={"python": "false"})
    guard = await OwnerGuard.spawn(LocalTransport(DEMO_HOST, run_dir=host.run_dir), broken,
                                   stop_server=True, remove_run_dir=False)
    session = HostSession(host, config, launch_profile=demo_profile(config),
                          server_gate=guard.ready, store_path=tmp_path / "history.sqlite")
    problems: list[str] = []
    session.observer = lambda e: problems.append(e.message) if isinstance(e, Problem) else None
    try:
        await session.start()
        deadline = time.monotonic() + 60
        while not any("launch failed" in p for p in problems):
            assert time.monotonic() < deadline, f"no launch failure reported: {problems}"
            await asyncio.sleep(0.05)
        assert any("demo: the cleanup guard did not start (exit 1)" in p for p in problems)
        assert not (run_dir / "server.json").exists()
        assert not _sims_under(run_dir)
    finally:
        await session.close()
        await guard.close()


async def test_a_guard_closed_while_starting_still_cleans_up(tmp_path: Path) -> None:
    """The console may quit before its guard is up (a key at once, a bad config): closing
    waits for the guard to guard, so it cleans up rather than dying on the way in."""
    config, run_dir = temp_demo(1, 0.0, tmp_path / "run")
    host = config.host(DEMO_HOST)
    guard = await OwnerGuard.spawn(LocalTransport(DEMO_HOST, run_dir=host.run_dir), host,
                                   stop_server=True, remove_run_dir=True)
    await guard.close()  # at once: its process is not even spawned yet
    assert not run_dir.exists()
