"""The run dir on a real host (issue 12, items 2 and 12), over the real sshd as non-root users.

- `~` in `run_dir` (the documented default `~/.plateau`) means the HOST's home: the console's
  log follows `<home>/.plateau/current.log` with the example config's defaults.
- Host-side programs (log follower, GPU agent, lifecycle helper) run from a content-addressed,
  hash-verified copy in `<run_dir>/bin`, so the host's `ps` shows a short command line.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from console.app.app import PlateauApp
from console.config import LoadedConfig, load_config_file
from console.host.hostd_client import LOADER
from console.logs.follower import FOLLOWER_SOURCE, LogFollower
from console.server.hostscript import run_host_script
from console.session.service import HostSession
from tests.support.app_fixtures import wait_until
from tests.support.host_fixtures import make_user_transport
from tests.support.sshd import SshUser

pytestmark = pytest.mark.sshd

ROOT = Path(__file__).resolve().parents[1]


def _give(path: Path, user: SshUser) -> None:
    """Hand a file or directory written by the tests (as root) to USER."""
    account = user.home.stat()
    os.chown(path, account.st_uid, account.st_gid)


def _user_commands(user: SshUser) -> list[str]:
    """What `ps` shows for USER's processes on the host."""
    result = subprocess.run(["ps", "-ww", "-o", "args=", "-u", user.user], capture_output=True,
                            text=True, check=False)
    return result.stdout.splitlines()


async def test_console_log_follows_with_the_example_configs_defaults(
    ssh_user: Callable[..., SshUser], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    server_flag_cache: Path,
) -> None:
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    user = ssh_user("bash", tag="log")
    config = load_config_file(ROOT / "config.example.toml").config
    example = config.hosts[0]
    assert example.run_dir == "~/.plateau" and example.python == "python3"
    host = example.model_copy(update={
        "address": "127.0.0.1", "port": user.port, "user": user.user,
        "identity_files": [str(user.key)], "known_hosts_file": str(user.known_hosts),
    })
    run_dir = user.home / ".plateau"
    run_dir.mkdir(mode=0o700, exist_ok=True)
    _give(run_dir, user)
    log = run_dir / "current.log"
    first, later = f"first-{uuid.uuid4().hex}", f"later-{uuid.uuid4().hex}"
    log.write_text("".join(f"[2026-01-01 00:00:0{i}] {first} {i}\n" for i in range(3)))
    _give(log, user)

    session = HostSession(host, config, launch_profile=None, store_path=tmp_path / "runs.db",
                          flag_cache_dir=server_flag_cache)
    app = PlateauApp(LoadedConfig(config, None), [session], tick_seconds=None,
                     profiles_dir=tmp_path / "profiles.d")
    state: Any = session.state
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            await wait_until(pilot, lambda: any(first in e.text for e in state.log),
                             "the log's existing lines", 90)
            with log.open("a") as out:  # and it keeps following
                out.write(f"[2026-01-01 00:00:09] {later}\n")
            await wait_until(pilot, lambda: any(later in e.text for e in state.log),
                             "a line written later", 90)
    finally:
        await session.close()


async def test_host_programs_run_from_a_verified_copy_short_in_ps(
    ssh_user: Callable[..., SshUser],
) -> None:
    user = ssh_user("fish")
    run_dir = f"~/run-{uuid.uuid4().hex[:12]}"
    directory = user.home / run_dir.removeprefix("~/")
    log = directory / "x.log"
    transport = make_user_transport(user, run_dir=run_dir)
    await transport.connect()
    follower = LogFollower(transport, f"{run_dir}/x.log", start_lines=5)
    try:
        await transport.write_file(f"{directory}/x.log", b"one\ntwo\n")
        batches = follower.batches()
        got: list[str] = []
        while len(got) < 2:
            got += [event.text for event in (await anext(batches)).events]
        # the follower on the host: `python3 <run_dir>/bin/plateau-follow-<hash>.py ...`
        digest = hashlib.sha256(FOLLOWER_SOURCE.encode()).hexdigest()
        program = directory / "bin" / f"plateau-follow-{digest[:16]}.py"
        commands = _user_commands(user)
        assert f"python3 {program} {log} 5" in commands, commands
        # (its parent is the connection's command helper, plateau-hostd)
        assert all(len(line) < 512 for line in commands), commands
        # no program's source in ps; the one `-c` is the command helper's fixed loader
        # (hostd_client.LOADER, ~140 characters), which reads the helper from its stdin
        assert not any("import " in line for line in commands if "plateau-hostd" not in line)
        assert any(line.endswith(f"-c {LOADER} plateau-hostd") for line in commands), commands
        # private: dir 0700, file 0600, and exactly the source we hold
        assert stat.S_IMODE((directory / "bin").stat().st_mode) == 0o700
        assert stat.S_IMODE(program.stat().st_mode) == 0o600
        assert program.read_text() == FOLLOWER_SOURCE
    finally:
        await follower.close()
        await transport.close()

    # A tampered copy is replaced before its next use (new connection: verified again).
    program.write_text("import os; os.system('touch /tmp/plateau-tampered')\n")
    transport = make_user_transport(user, run_dir=run_dir)
    await transport.connect()
    try:
        answer = await run_host_script(transport, "python3", "read", {"path": str(log)})
        assert answer["exists"] is True
        path = await transport.install_program("plateau-follow", FOLLOWER_SOURCE)
        assert path == str(program) and program.read_text() == FOLLOWER_SOURCE
        leftovers = [p.name for p in (directory / "bin").iterdir() if "tmp" in p.name]
        assert leftovers == []
    finally:
        await transport.close()
        shutil.rmtree(directory, ignore_errors=True)
