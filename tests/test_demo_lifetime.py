"""A demo server dies with its owner: SIGKILL of `plateau sweep --demo` mid-sweep leaves no
simulated server and no temp dir behind (the host-side guard on a pipe from the owner)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from tests.support.cli_hosts import cli_env, plateau_argv


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


def _poll(predicate, what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.1)


def test_sigkill_of_sweep_demo_takes_the_sim_and_temp_dir(tmp_path: Path) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**cli_env(tmp_path), "TMPDIR": str(temp)}
    owner = subprocess.Popen(
        plateau_argv("sweep", "--demo", "--concurrency", "1", "--step-seconds", "600",
                     "--no-flush"),
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        _poll(lambda: bool(_sims_under(temp)) and any(
            (d / "server.json").exists() and '"ready"' in (d / "server.json").read_text()
            for d in temp.glob("plateau-demo-*")), "the demo server", 120)
        run_dirs = list(temp.glob("plateau-demo-*"))
        assert run_dirs and _sims_under(temp)
        os.kill(owner.pid, signal.SIGKILL)  # no cleanup of its own can run
        owner.wait(10)
        _poll(lambda: not _sims_under(temp), "the simulated server to go", 60)
        _poll(lambda: not any(d.exists() for d in run_dirs), "the temp run dir to go", 30)
    finally:
        if owner.poll() is None:
            os.killpg(owner.pid, signal.SIGKILL)
        for pid in _sims_under(temp):
            os.killpg(os.getpgid(pid), signal.SIGKILL)
