"""The test sshd lets the tests in as non-root users whose login shells differ: the base
the login-shell-proof command tests (and the host-wide lease tests) stand on."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import pytest

from tests.support.host_fixtures import make_user_transport
from tests.support.sshd import LOGIN_SHELLS, SshUser


@pytest.mark.sshd
@pytest.mark.parametrize("shell", LOGIN_SHELLS)
def test_openssh_client_logs_in_with_that_login_shell(
    ssh_user: Callable[..., SshUser], shell: str
) -> None:
    user = ssh_user(shell)
    result = subprocess.run(
        user.ssh_argv("echo $SHELL; id -un; id -u"),
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, check=False,
    )
    assert result.returncode == 0, result.stderr
    login_shell, name, uid = result.stdout.split()
    assert (login_shell, name) == (user.shell, user.user)
    assert login_shell.endswith("/" + shell)
    assert int(uid) != 0


@pytest.mark.sshd
async def test_transport_logs_in_as_a_second_distinct_user(
    ssh_user: Callable[..., SshUser],
) -> None:
    first, second = ssh_user("bash"), ssh_user("bash", tag="2")
    assert first.user != second.user and first.home != second.home
    transport = make_user_transport(second)
    await transport.connect()
    try:
        result = await transport.run(["id", "-un"])
    finally:
        await transport.close()
    assert result.stdout.strip() == second.user
