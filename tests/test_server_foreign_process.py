"""Stop/restart signal only what a launch record proves Plateau started (pid + start time +
boot + launch id), over the real sshd: a foreign process on the port, even one whose argv
says "sglang" and a forged record naming it, is never signalled until adopted explicitly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.cli_hosts import cli_env, plateau_argv, write_sshd_config
from tests.support.server_fixtures import free_port
from tests.support.sshd import Sshd

pytestmark = pytest.mark.sshd


def _plateau(tmp_path: Path, *args: str) -> tuple[int, str]:
    done = subprocess.run(plateau_argv(*args), env=cli_env(tmp_path), capture_output=True,
                          text=True, timeout=180, check=False)
    return done.returncode, done.stdout + done.stderr


def _listening(port: int, process: subprocess.Popen[bytes]) -> None:
    import socket

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, "the foreign server exited"
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError("the foreign server never listened")


def _ticks(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[19])


@pytest.mark.slow
def test_foreign_process_is_never_signalled_until_adopted(sshd: Sshd, tmp_path: Path) -> None:
    port = free_port()
    run_dir = tmp_path / "run"
    config = write_sshd_config(tmp_path / "config.toml", sshd, port=port, run_dir=run_dir,
                               state_file=tmp_path / "gpu-state.json")
    notes = tmp_path / "sglang-notes"
    notes.mkdir()
    foreign = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
         "--directory", str(notes)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        _listening(port, foreign)
        # A record naming it, right pid and start time, but not our launch (no launch id).
        run_dir.mkdir(mode=0o700)
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        (run_dir / "server.json").write_text(json.dumps({
            "pid": foreign.pid, "pgid": foreign.pid, "port": port, "profile": "sim",
            "argv": ["sglang"], "state": "ready", "origin": "launched",
            "launch_id": "0" * 32, "start_ticks": _ticks(foreign.pid), "boot_id": boot,
        }))
        for action in ("stop", "restart"):
            code, text = _plateau(tmp_path, "--config", str(config), "server", action, "box")
            assert code == 1, text
            assert f"pid {foreign.pid}" in text and "did not start" in text, text
            assert foreign.poll() is None  # never signalled
        # adopt: first the command line, then the operator's explicit pid
        code, text = _plateau(tmp_path, "--config", str(config), "server", "adopt", "box")
        assert code == 1 and f"pid {foreign.pid}: " in text and "sglang-notes" in text, text
        assert foreign.poll() is None
        code, text = _plateau(tmp_path, "--config", str(config), "server", "adopt", "box",
                              "--pid", str(foreign.pid))
        assert code == 0, text
        code, text = _plateau(tmp_path, "--config", str(config), "server", "stop", "box",
                              "--drain-timeout", "5")
        assert code == 0, text
        assert foreign.wait(timeout=30) is not None
    finally:
        if foreign.poll() is None:
            os.killpg(foreign.pid, signal.SIGKILL)
