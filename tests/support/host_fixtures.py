"""Fixtures: `sshd` (a real OpenSSH server on loopback, one per session), `ssh_transport`
(an SshTransport connected to it, fresh per test), `local_transport`, `any_transport`
(each test runs once per transport), and `ssh_user` (log in as a non-root user with a
chosen login shell).

`ssh_user(shell="bash", tag="")` returns an `SshUser` (host, port, user, key, known_hosts,
shell, home) for the account plateau-t-<shell><tag>, created on first use with `useradd`
(the tests run as root, as CI does) and authorised for the sshd's client key. Shells:
bash, dash, zsh, fish, tcsh (`LOGIN_SHELLS`). Use a tag for a second, distinct user with
the same shell (e.g. "another user on the host must not read this"):

    def test_x(ssh_user):
        alice = ssh_user("fish")
        transport = make_user_transport(alice)        # an SshTransport logging in as alice
        subprocess.run(alice.ssh_argv("id"), ...)      # or the OpenSSH client itself
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from console.host.local import LocalTransport
from console.host.ssh import SshTransport
from tests.support.sshd import Sshd, SshUser, start_sshd


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


def make_ssh_transport(sshd: Sshd, **overrides: object) -> SshTransport:
    """An (unconnected) SshTransport logging in to the test sshd as the user running the tests."""
    return _transport("sshd-test", sshd.port, sshd.user, sshd.client_key, sshd.known_hosts,
                      overrides)


def make_user_transport(user: SshUser, **overrides: object) -> SshTransport:
    """An (unconnected) SshTransport logging in to the test sshd as USER (see `ssh_user`)."""
    return _transport(f"sshd-{user.user}", user.port, user.user, user.key, user.known_hosts,
                      overrides)


def _transport(
    name: str, port: int, username: str, key: Path, known_hosts: Path,
    overrides: dict[str, object],
) -> SshTransport:
    options: dict[str, object] = {
        "port": port,
        "username": username,
        "identity_files": [str(key)],
        "known_hosts": known_hosts,
        "use_ssh_config": False,
        "keepalive_interval": 5.0,
        "max_reconnect_delay": 1.0,
    }
    options.update(overrides)
    return SshTransport(name, "127.0.0.1", **options)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def ssh_user(sshd: Sshd) -> Callable[..., SshUser]:
    """Factory: `ssh_user(shell="bash", tag="")` -> SshUser (see the module docstring)."""
    return sshd.login_as


@pytest.fixture
async def ssh_transport(sshd: Sshd) -> AsyncIterator[SshTransport]:
    transport = make_ssh_transport(sshd)
    await transport.connect()
    yield transport
    await transport.close()


@pytest.fixture
async def local_transport() -> AsyncIterator[LocalTransport]:
    transport = LocalTransport("local-test")
    await transport.connect()
    yield transport
    await transport.close()


@pytest.fixture(params=["local", "ssh"])
async def any_transport(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[LocalTransport | SshTransport]:
    if request.param == "local":
        transport: LocalTransport | SshTransport = LocalTransport("local-test")
    else:
        transport = make_ssh_transport(request.getfixturevalue("sshd"))
    await transport.connect()
    yield transport
    await transport.close()
