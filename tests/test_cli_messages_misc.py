"""Messages that used to mislead (issue 25 item 13): a broken `--config` file named with a
`--demo` command fails naming file, key and line; a host `python` that exits without a word
(`/bin/false`) is said to have done so, over the real sshd."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.cli_hosts import cli_env, plateau_argv, write_sshd_config
from tests.support.server_fixtures import free_port
from tests.support.sshd import Sshd


def _plateau(tmp_path: Path, *args: str) -> tuple[int, str]:
    done = subprocess.run(plateau_argv(*args), env=cli_env(tmp_path), capture_output=True,
                          text=True, timeout=180, check=False)
    return done.returncode, done.stdout + done.stderr


@pytest.mark.parametrize("command", [["sweep", "--demo"], ["server", "status", "--demo"]])
def test_broken_config_named_with_demo_fails_naming_file_key_and_line(
        tmp_path: Path, command: list[str]) -> None:
    broken = tmp_path / "BROKEN.toml"
    broken.write_text('[[hosts]]\nname = "box"\nlocal = true\nprofle = "typo"\n')
    code, text = _plateau(tmp_path, "--config", str(broken), *command)
    assert code == 2, text
    assert f"{broken}:4" in text and "profle" in text, text


@pytest.mark.sshd
def test_host_python_that_exits_silently_is_named(sshd: Sshd, tmp_path: Path) -> None:
    config = write_sshd_config(tmp_path / "config.toml", sshd, port=free_port(),
                               run_dir=tmp_path / "run", state_file=tmp_path / "state.json")
    config.write_text(config.read_text().replace(
        f'python = "{__import__("sys").executable}"', 'python = "/bin/false"'))
    assert 'python = "/bin/false"' in config.read_text()
    code, text = _plateau(tmp_path, "--config", str(config), "server", "status", "box")
    assert code == 1, text
    assert "the host python `/bin/false` exited 1 with no output" in text, text
    code, text = _plateau(tmp_path, "--config", str(config), "server", "stop", "box")
    assert code == 1, text
    # A stop takes the lease first, and the lease's token goes to the host on stdin through a
    # helper run (not a stream) before anything else: its stderr is read, so "with no output".
    assert "host helper `lease_token` failed" in text, text
    assert "the host python `/bin/false` exited 1 with no output" in text, text
