"""A config file naming the test sshd as a host, and `plateau` run as a separate process (so
host-wide exclusion is tested between processes, as it happens on a real host)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tests.support.server_fixtures import SIM_LAUNCH
from tests.support.sshd import Sshd


def write_sshd_config(
    path: Path, sshd: Sshd, *, port: int, run_dir: Path, state_file: Path,
    startup_seconds: float = 0.0, user: str | None = None, client_key: Path | None = None,
    lease_grace_s: float = 2.0,
) -> Path:
    """A config with host "box" (the sshd) and profile "sim" (the simulator on `port`).

    `lease_grace_s`: how long the host keeps a lease whose holder's connection dropped (a
    killed holder's lease is free after it; short here so such tests stay short)."""
    q = json.dumps  # a JSON string is a valid TOML basic string
    path.write_text(
        f"[[hosts]]\nname = \"box\"\naddress = \"127.0.0.1\"\nport = {sshd.port}\n"
        f"user = {q(user or sshd.user)}\n"
        f"identity_files = [{q(str(client_key or sshd.client_key))}]\n"
        f"known_hosts_file = {q(str(sshd.known_hosts))}\n"
        f"python = {q(sys.executable)}\nrun_dir = {q(str(run_dir))}\nprofile = \"sim\"\n"
        f"lease_grace_s = {lease_grace_s}\n\n"
        f"[profiles.sim]\nlaunch = {q(SIM_LAUNCH)}\nmodel_path = \"test/Example-MoE\"\n"
        f"port = {port}\n[profiles.sim.flags]\nsim-startup-seconds = {startup_seconds}\n"
        f"sim-num-gpus = 2\nsim-state-file = {q(str(state_file))}\n"
        "\n[sweeps.long]\nconcurrency = [1]\ninput_len = 16\noutput_len = 16\n"
        "step_seconds = 600\n"
    )
    return path


def write_local_ideal_config(path: Path, port: int, run_dir: Path | None = None) -> Path:
    """A config with the local host "box" whose profile "ideal" is the sim already running on
    `port` (a fixture's), and a two-step sweep preset "tiny"."""
    run_line = f"run_dir = {json.dumps(str(run_dir))}\n" if run_dir is not None else ""
    path.write_text(
        f'default_host = "box"\n[[hosts]]\nname = "box"\nlocal = true\nprofile = "ideal"\n'
        f'{run_line}[profiles.ideal]\nmodel_path = "test-model"\nport = {port}\n'
        "flags = { tp = 1 }\n[sweeps.tiny]\nconcurrency = [1, 2]\ninput_len = 16\n"
        "output_len = 8\nprompts_per_concurrency = 2\n"
    )
    return path


def plateau_argv(*args: str) -> list[str]:
    return [sys.executable, "-c", "import sys; from console.cli import main; sys.exit(main())",
            *args]


def cli_env(tmp_path: Path) -> dict[str, str]:
    """Private cache/state dirs; the flag cache is shared with nothing else."""
    env = dict(os.environ)
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    env["XDG_DATA_HOME"] = str(tmp_path / "data")
    env.pop("PLATEAU_DB", None)
    return env


def spawn_plateau(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        plateau_argv(*args), env=cli_env(tmp_path), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
    )


def sim_processes(state_file: Path) -> list[int]:
    """PIDs of simulated servers using `state_file` (i.e. started for this test)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            stat = (entry / "stat").read_text().rsplit(")", 1)[-1].split()
        except OSError:
            continue
        if stat and stat[0] != "Z" and b"console.sim" in argv and str(state_file).encode() in argv:
            found.append(int(entry.name))
    return found


def wait_for(predicate: Callable[[], bool], what: str, timeout: float = 90.0) -> None:
    """Poll `predicate` every 0.1 s until it holds; fail naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.1)


def finish(process: subprocess.Popen[str], timeout: float = 120) -> tuple[int, str]:
    """A spawned plateau's exit code and its stdout + stderr."""
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out + err
