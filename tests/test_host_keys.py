"""Host keys against a real sshd: the refusal carries its facts, PLATEAU_ACCEPT_HOST_KEY
accepts exactly one fingerprint (headless commands), and a session waits for the operator on
an unknown key and gives up quietly (once, loudly) on a changed one."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import asyncssh
import pytest

from console import aio
from console.cli import main
from console.config_models import HostConfig, PlateauConfig
from console.errors import HostKeyError, UsageError
from console.host.factory import accept_fingerprint_from_env, transport_for
from console.host.hostkeys import ACCEPT_ENV
from console.host.transport import Transport
from console.session.events import ConnectionStatus, HostKeyChanged, HostKeyUnknown, Problem
from console.session.service import HostSession
from tests.support.host_fixtures import make_ssh_transport
from tests.support.sshd import Sshd

pytestmark = pytest.mark.sshd


def host_fingerprint(sshd: Sshd) -> str:
    return asyncssh.read_public_key(f"{sshd.host_key}.pub").get_fingerprint("sha256")


def other_key_line(sshd: Sshd) -> str:
    """A known_hosts line that pins a *different* key for the sshd's address."""
    public = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().split()
    return f"[127.0.0.1]:{sshd.port} {public[0]} {public[1]}\n"


def other_fingerprint() -> str:
    return asyncssh.generate_private_key("ssh-ed25519").get_fingerprint("sha256")


def ssh_host(sshd: Sshd, known_hosts: Path, name: str = "keyed") -> HostConfig:
    return HostConfig(
        name=name, address="127.0.0.1", port=sshd.port, user=sshd.user,
        identity_files=[str(sshd.client_key)], known_hosts_file=str(known_hosts),
        python=sys.executable,
    )


# -- the error's facts ------------------------------------------------------------------------


async def test_unknown_key_error_carries_the_problem(sshd: Sshd, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    with pytest.raises(HostKeyError) as info:
        await make_ssh_transport(sshd, known_hosts=known).connect()
    problem = info.value.problem
    assert problem is not None
    assert (problem.verdict, problem.host, problem.port) == ("unknown", "127.0.0.1", sshd.port)
    assert (problem.key_type, problem.fingerprint) == ("ssh-ed25519", host_fingerprint(sshd))
    assert problem.known_hosts == known
    message = str(info.value)
    assert "\n" not in message and problem.fingerprint in message
    assert f"{ACCEPT_ENV}={problem.fingerprint}" in message
    assert not known.exists()


async def test_changed_key_error_carries_the_problem(sshd: Sshd, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    known.write_text(other_key_line(sshd))
    with pytest.raises(HostKeyError, match="HOST KEY CHANGED") as info:
        # even naming the presented key's fingerprint does not override a pinned one
        await make_ssh_transport(
            sshd, known_hosts=known, accept_fingerprint=host_fingerprint(sshd)
        ).connect()
    problem = info.value.problem
    assert problem is not None and problem.verdict == "changed"
    assert problem.fingerprint == host_fingerprint(sshd)
    assert ACCEPT_ENV not in str(info.value)  # nothing to accept here


# -- PLATEAU_ACCEPT_HOST_KEY --------------------------------------------------------------------


def test_env_takes_exactly_one_fingerprint() -> None:
    fingerprint = other_fingerprint()
    assert accept_fingerprint_from_env({}) is None
    assert accept_fingerprint_from_env({ACCEPT_ENV: f" {fingerprint} "}) == fingerprint
    for blanket in ("yes", "*", "1", "accept-new", f"{fingerprint},{fingerprint}", "MD5:ab:cd"):
        with pytest.raises(UsageError, match=ACCEPT_ENV):
            accept_fingerprint_from_env({ACCEPT_ENV: blanket})


async def test_env_wrong_fingerprint_refuses_right_one_accepts(
    sshd: Sshd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    known = tmp_path / "known_hosts"
    host = ssh_host(sshd, known)
    wrong = other_fingerprint()
    monkeypatch.setenv(ACCEPT_ENV, wrong)
    with pytest.raises(HostKeyError, match="unknown host key") as info:
        await transport_for(host, use_ssh_config=False).connect()
    assert f"given to accept, {wrong}, is not this key's" in str(info.value)
    assert not known.exists()

    monkeypatch.setenv(ACCEPT_ENV, host_fingerprint(sshd))
    transport = transport_for(host, use_ssh_config=False)
    try:
        assert (await transport.run(["true"])).ok
    finally:
        await transport.close()
    assert known.read_text().startswith(f"[127.0.0.1]:{sshd.port} ssh-ed25519 ")

    monkeypatch.delenv(ACCEPT_ENV)  # saved: strict verification now passes on its own
    again = transport_for(host, use_ssh_config=False)
    try:
        assert (await again.run(["true"])).ok
    finally:
        await again.close()


def _cli_config(sshd: Sshd, tmp_path: Path, known: Path) -> Path:
    config = tmp_path / "config.toml"
    config.write_text(
        f'[[hosts]]\nname = "box"\naddress = "127.0.0.1"\nport = {sshd.port}\n'
        f'user = "{sshd.user}"\nidentity_files = ["{sshd.client_key}"]\n'
        f'known_hosts_file = "{known}"\npython = "{sys.executable}"\n'
    )
    return config


def test_headless_command_refuses_then_accepts_by_env(
    sshd: Sshd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    known = tmp_path / "known_hosts"
    config = _cli_config(sshd, tmp_path, known)
    argv = ["--config", str(config), "gpus", "box", "--once", "--backend", "sim", "--sim-gpus", "2"]
    monkeypatch.delenv(ACCEPT_ENV, raising=False)
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("plateau: unknown host key")
    assert host_fingerprint(sshd) in err and ACCEPT_ENV in err

    monkeypatch.setenv(ACCEPT_ENV, other_fingerprint())
    assert main(argv) == 1
    assert "is not this key's" in capsys.readouterr().err
    assert not known.exists()

    monkeypatch.setenv(ACCEPT_ENV, "yes")
    assert main(argv) == 2  # a blanket value is an operator error, not trust
    assert capsys.readouterr().err.startswith(f"plateau: {ACCEPT_ENV} must be one SHA256")

    monkeypatch.setenv(ACCEPT_ENV, host_fingerprint(sshd))
    assert main(argv) == 0
    assert "2 GPUs" in capsys.readouterr().out
    assert len(known.read_text().splitlines()) == 1


# -- the session ------------------------------------------------------------------------------


# Read afresh: mypy keeps an earlier assert's narrowing (`== "failed"`, `is None`) across the
# awaits that change them.
def connection(session: HostSession) -> ConnectionStatus:
    return session.state.connection


def current_transport(session: HostSession) -> Transport | None:
    return session.transport


async def _drain(session: HostSession, until: type, timeout: float = 10.0) -> list[object]:
    seen: list[object] = []

    async def read() -> None:
        async for event in session.events():
            seen.append(event)
            if isinstance(event, until):
                return

    await aio.wait_for(read(), timeout)
    return seen


async def test_session_waits_on_unknown_key_then_accepts(sshd: Sshd, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    host = ssh_host(sshd, known)
    session = HostSession(host, PlateauConfig(hosts=[host]))
    try:
        await session.start()
        events = await _drain(session, HostKeyUnknown)
        asked = events[-1]
        assert isinstance(asked, HostKeyUnknown)
        assert (asked.fingerprint, asked.port, asked.known_hosts) == (
            host_fingerprint(sshd), sshd.port, str(known))
        assert session.state.connection == "failed" and session.state.host_key == asked
        await asyncio.sleep(1.0)  # no retry meanwhile: nothing else is queued
        assert session._queue.empty() and session.transport is None

        assert not await session.accept_host_key(other_fingerprint())  # not the key asked about
        assert not known.exists()
        assert await session.accept_host_key(asked.fingerprint)
        assert connection(session) == "connected" and session.state.host_key is None
        transport = current_transport(session)
        assert transport is not None and (await transport.run(["true"])).ok
        assert f"[127.0.0.1]:{sshd.port} ssh-ed25519" in known.read_text()
        messages = [r.message for r in session.state.events if r.source == "host-key"]
        assert any("accepted and saved" in m for m in messages), messages
    finally:
        await session.close()


async def test_session_changed_key_mid_session_reported_once(sshd: Sshd, tmp_path: Path) -> None:
    """The host's key changes under a live session (a drop, then a reconnect meets another
    key): one HostKeyChanged, every loop stops, no retry spam, known_hosts untouched."""
    known = tmp_path / "known_hosts"
    known.write_text(sshd.known_hosts.read_text())
    host = ssh_host(sshd, known, name="keyed-mid")
    session = HostSession(host, PlateauConfig(hosts=[host]))
    collected: list[object] = []

    async def collect() -> None:
        async for event in session.events():
            collected.append(event)

    reader = asyncio.ensure_future(collect())
    try:
        await session.start()
        for _ in range(200):
            if session.state.connection == "connected":
                break
            await asyncio.sleep(0.05)
        assert session.state.connection == "connected"
        pinned = other_key_line(sshd)
        known.write_text(pinned)
        assert sshd.drop_connections() >= 1
        for _ in range(200):
            if any(isinstance(e, HostKeyChanged) for e in collected):
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(2.5)  # longer than the loops' first backoffs
        changed = [e for e in collected if isinstance(e, HostKeyChanged)]
        assert len(changed) == 1, collected
        assert changed[0].fingerprint == host_fingerprint(sshd)
        assert session.transport is None and session.state.host_key is None
        assert connection(session) == "failed"
        after = collected[collected.index(changed[0]) + 1:]
        assert not [e for e in after if isinstance(e, Problem) and "retrying" in e.message]
        assert known.read_text() == pinned
        errors = [r for r in session.state.events if r.level == "error"]
        assert any("HOST KEY CHANGED" in r.message for r in errors)
        assert not await session.accept_host_key(changed[0].fingerprint)  # never offered
        assert known.read_text() == pinned
    finally:
        await session.close()
        reader.cancel()
