"""Host keys a jump host presents, and known_hosts with @cert-authority lines only, against a
real sshd (issue 25 item 13): the jump host's key follows the host's known_hosts file,
policy and accepted fingerprint, and is refused with its fingerprint; a CA-only known_hosts
is refused saying certificates are not checked, never "Connection lost"."""

from __future__ import annotations

from pathlib import Path

import asyncssh
import pytest

from console.errors import HostKeyError
from tests.support.host_fixtures import make_ssh_transport
from tests.support.sshd import Sshd

pytestmark = pytest.mark.sshd


def _fingerprint(sshd: Sshd) -> str:
    return asyncssh.read_public_key(f"{sshd.host_key}.pub").get_fingerprint("sha256")


def _pinned(sshd: Sshd, path: Path) -> Path:
    """known_hosts pinning the host (as 127.0.0.1) but not the jump host (as localhost)."""
    path.write_text(sshd.known_hosts.read_text())
    return path


def _jump(sshd: Sshd) -> str:
    return f"{sshd.user}@localhost:{sshd.port}"


async def test_jump_host_key_is_refused_with_its_fingerprint(sshd: Sshd, tmp_path: Path) -> None:
    known = _pinned(sshd, tmp_path / "known_hosts")
    transport = make_ssh_transport(sshd, known_hosts=known, jump_host=_jump(sshd))
    with pytest.raises(HostKeyError) as info:
        await transport.connect()
    problem = info.value.problem
    assert problem is not None
    assert (problem.verdict, problem.host, problem.port) == ("unknown", "localhost", sshd.port)
    assert problem.fingerprint == _fingerprint(sshd)
    assert f"jump host localhost:{sshd.port}" in str(info.value)
    assert _fingerprint(sshd) in str(info.value) and str(known) in str(info.value)
    assert "[localhost]" not in known.read_text()  # nothing learnt on a refusal


@pytest.mark.parametrize("how", ["accept-new", "fingerprint"])
async def test_jump_host_key_follows_the_hosts_policy(sshd: Sshd, tmp_path: Path,
                                                      how: str) -> None:
    known = _pinned(sshd, tmp_path / "known_hosts")
    options: dict[str, object] = (
        {"policy": "accept-new"} if how == "accept-new"
        else {"accept_fingerprint": _fingerprint(sshd)}
    )
    transport = make_ssh_transport(sshd, known_hosts=known, jump_host=_jump(sshd), **options)
    await transport.connect()
    try:
        result = await transport.run(["echo", "through the jump"])
        assert result.stdout.strip() == "through the jump"
    finally:
        await transport.close()
    assert f"[localhost]:{sshd.port} ssh-ed25519" in known.read_text()  # in the host's file


async def test_cert_authority_only_known_hosts_says_so(sshd: Sshd, tmp_path: Path) -> None:
    ca = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().split()
    known = tmp_path / "known_hosts"
    known.write_text(f"@cert-authority [127.0.0.1]:{sshd.port} {ca[0]} {ca[1]}\n")
    with pytest.raises(HostKeyError) as info:
        await make_ssh_transport(sshd, known_hosts=known).connect()
    text = str(info.value)
    assert "Connection lost" not in text
    assert "@cert-authority" in text and "does not check host certificates" in text, text
    assert _fingerprint(sshd) in text  # what to add
    # and accepting the host's own key works with such a file
    transport = make_ssh_transport(sshd, known_hosts=known,
                                   accept_fingerprint=_fingerprint(sshd))
    await transport.connect()
    await transport.close()
    assert known.read_text().count("\n") == 2
