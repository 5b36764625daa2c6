"""known_hosts matched as OpenSSH does, against the real sshd: @revoked always refused (never
appended under accept-new), a port-22 entry does not pin [host]:PORT, hashed names,
wildcards and negation."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from pathlib import Path

import asyncssh
import pytest

from console.errors import HostKeyError
from console.host.hostkeys import host_field_matches
from tests.support.host_fixtures import make_ssh_transport
from tests.support.sshd import Sshd

pytestmark = pytest.mark.sshd


def _key_text(sshd: Sshd) -> str:
    return " ".join(Path(f"{sshd.host_key}.pub").read_text().split()[:2])


def _other_key_text() -> str:
    key = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode()
    return " ".join(key.split()[:2])


def _hashed(name: str) -> str:
    salt = os.urandom(20)
    digest = hmac.new(salt, name.encode(), hashlib.sha1).digest()
    return f"|1|{base64.b64encode(salt).decode()}|{base64.b64encode(digest).decode()}"


async def _connect(sshd: Sshd, known: Path, policy: str = "strict") -> None:
    transport = make_ssh_transport(sshd, known_hosts=known, policy=policy)
    try:
        await transport.connect()
        result = await transport.run(["true"])
        assert result.ok
    finally:
        await transport.close()


@pytest.mark.parametrize("policy", ["strict", "accept-new"])
async def test_revoked_key_is_refused_and_never_appended(
    sshd: Sshd, tmp_path: Path, policy: str
) -> None:
    known = tmp_path / "known_hosts"
    known.write_text(f"@revoked [127.0.0.1]:{sshd.port} {_key_text(sshd)}\n")
    before = known.read_text()
    with pytest.raises(HostKeyError, match="REVOKED") as caught:
        await _connect(sshd, known, policy)
    assert caught.value.problem is not None and caught.value.problem.verdict == "revoked"
    assert known.read_text() == before


async def test_revoked_wins_over_a_trusted_line(sshd: Sshd, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{sshd.port} {_key_text(sshd)}\n"
                     f"@revoked * {_key_text(sshd)}\n")
    with pytest.raises(HostKeyError, match="REVOKED"):
        await _connect(sshd, known)


async def test_port_22_entry_does_not_pin_another_port(sshd: Sshd, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    known.write_text(f"127.0.0.1 {_other_key_text()}\n")
    with pytest.raises(HostKeyError) as caught:
        await _connect(sshd, known)
    assert caught.value.problem is not None
    assert caught.value.problem.verdict == "unknown"  # not a false "HOST KEY CHANGED"
    await _connect(sshd, known, "accept-new")
    assert f"[127.0.0.1]:{sshd.port} {_key_text(sshd)}" in known.read_text()


async def test_hashed_wildcard_and_negated_entries(sshd: Sshd, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    known.write_text(f"{_hashed(f'[127.0.0.1]:{sshd.port}')} {_key_text(sshd)}\n")
    await _connect(sshd, known)
    known.write_text(f"{_hashed(f'[127.0.0.1]:{sshd.port}')} {_other_key_text()}\n")
    with pytest.raises(HostKeyError, match="HOST KEY CHANGED"):
        await _connect(sshd, known)
    known.write_text(f"[127.0.0.?]:* {_key_text(sshd)}\n")
    await _connect(sshd, known)
    known.write_text(f"*,![127.0.0.1]:{sshd.port} {_key_text(sshd)}\n")
    with pytest.raises(HostKeyError) as caught:
        await _connect(sshd, known)
    assert caught.value.problem is not None and caught.value.problem.verdict == "unknown"


def test_host_field_patterns() -> None:
    assert host_field_matches("[127.0.0.1]:2222", "[127.0.0.1]:2222")
    assert not host_field_matches("127.0.0.1", "[127.0.0.1]:2222")
    assert host_field_matches("gpu-*,!gpu-box-9", "gpu-box-1")
    assert not host_field_matches("gpu-*,!gpu-box-9", "gpu-box-9")
    assert host_field_matches("GPU-Box-1", "gpu-box-1")
