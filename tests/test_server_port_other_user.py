"""Another user's process on the profile's port, over the real sshd with two non-root users
(issue 25 item 13): `server stop` never says "port free" and `adopt` never says "nothing
listens"; both name the other user, which is what this account can see of it."""

from __future__ import annotations

import json
import pwd
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.cli_hosts import cli_env, plateau_argv
from tests.support.server_fixtures import free_port
from tests.support.sshd import Sshd, SshUser

pytestmark = pytest.mark.sshd
PYTHON = "/usr/bin/python3"  # the host helpers are stdlib only; the test venv is root's

_LISTEN = ("import socket, sys, time\ns = socket.socket()\n"
           "s.bind(('127.0.0.1', int(sys.argv[1])))\ns.listen()\ntime.sleep(600)\n")


def _plateau(tmp_path: Path, *args: str) -> tuple[int, str]:
    done = subprocess.run(plateau_argv(*args), env=cli_env(tmp_path), capture_output=True,
                          text=True, timeout=180, check=False)
    return done.returncode, done.stdout + done.stderr


def _config(path: Path, sshd: Sshd, operator: SshUser, port: int) -> Path:
    q = json.dumps
    path.write_text(
        f'[[hosts]]\nname = "box"\naddress = "127.0.0.1"\nport = {sshd.port}\n'
        f"user = {q(operator.user)}\nidentity_files = [{q(str(sshd.client_key))}]\n"
        f"known_hosts_file = {q(str(sshd.known_hosts))}\npython = {q(PYTHON)}\n"
        f'run_dir = "~/.plateau-t-{uuid.uuid4().hex[:8]}"\nprofile = "p"\n\n'
        f'[profiles.p]\nmodel_path = "test-model"\nport = {port}\n'
    )
    return path


@pytest.fixture
def theirs(ssh_user: Callable[..., SshUser]) -> Iterator[tuple[int, str]]:
    """A process of another (non-root) user listening on a port: (port, that user's name)."""
    other = ssh_user("zsh", tag="2")
    account = pwd.getpwnam(other.user)
    port = free_port()
    process = subprocess.Popen([PYTHON, "-c", _LISTEN, str(port)], user=account.pw_uid,
                               group=account.pw_gid, cwd="/", stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while True:
        assert process.poll() is None, "the other user's listener exited"
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                break
        assert time.monotonic() < deadline, "the other user's listener never listened"
        time.sleep(0.05)
    yield port, other.user
    process.kill()
    process.wait(10)


def test_stop_and_adopt_name_another_users_listener(
        sshd: Sshd, ssh_user: Callable[..., SshUser], theirs: tuple[int, str],
        tmp_path: Path) -> None:
    port, other = theirs
    operator = ssh_user("bash")
    config = _config(tmp_path / "config.toml", sshd, operator, port)
    code, text = _plateau(tmp_path, "--config", str(config), "server", "stop", "box")
    assert code == 1, text
    assert "port free" not in text, text
    assert f"port {port} is used by a process of another user, {other}" in text, text
    code, text = _plateau(tmp_path, "--config", str(config), "server", "adopt", "box")
    assert code == 1, text
    assert "nothing listens" not in text, text
    assert f"a process of another user, {other} (uid {pwd.getpwnam(other).pw_uid})" in text
    assert "cannot inspect or signal" in text, text


def test_stop_with_nothing_on_the_port_checks_the_port(
        sshd: Sshd, ssh_user: Callable[..., SshUser], tmp_path: Path) -> None:
    port = free_port()
    config = _config(tmp_path / "config.toml", sshd, ssh_user("bash"), port)
    code, text = _plateau(tmp_path, "--config", str(config), "server", "stop", "box")
    assert code == 0, text
    assert f"port {port} free" in text, text  # the profile's port, looked at
