"""Fixtures: `sshd` (a real OpenSSH server on loopback, one per session), `ssh_transport`
(an SshTransport connected to it, fresh per test), `local_transport`, and `any_transport`
(each test runs once per transport)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from console.host.local import LocalTransport
from console.host.ssh import SshTransport
from tests.support.sshd import Sshd, start_sshd


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


def make_ssh_transport(sshd: Sshd, **overrides: object) -> SshTransport:
    options: dict[str, object] = {
        "port": sshd.port,
        "username": sshd.user,
        "identity_files": [str(sshd.client_key)],
        "known_hosts": sshd.known_hosts,
        "use_ssh_config": False,
        "keepalive_interval": 5.0,
        "max_reconnect_delay": 1.0,
    }
    options.update(overrides)
    return SshTransport("sshd-test", "127.0.0.1", **options)  # type: ignore[arg-type]


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
