"""The lease's token stays this account's (issue 41, Low), over the local transport and the
real sshd: it is what attaches to the host's keeper, and a helper's argv is readable by
every user of the host (`ps`, /proc/PID/cmdline). While a lease is held no process's
cmdline holds it (the keeper is a fork of the helper, so it kept the helper's argv for the
lease's whole life), no argv Plateau ran (taking, keeping, releasing) held it, and the file
that hands it to the stream is gone once the stream has read it."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import re
import secrets
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from console import aio
from console.config_models import HostConfig
from console.host.local import LocalTransport
from console.host.ssh import SshTransport
from console.server.hostscript import run_host_script, stream_host_script
from console.server.lease import host_lease
from tests.support.host_fixtures import make_user_transport
from tests.support.sshd import SshUser

HEX = re.compile(rb"[0-9a-f]{32}")


def _holds(data: bytes, sha: str) -> bool:
    """Whether `data` holds the token whose sha256 is `sha` (tokens are 32 hex digits)."""
    return any(hashlib.sha256(m.group()).hexdigest() == sha for m in HEX.finditer(data))


def _cmdlines() -> list[bytes]:
    out = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):  # gone, or not ours to read
                out.append((proc / "cmdline").read_bytes())
    return out


def _record_argv(transport: LocalTransport | SshTransport) -> list[Sequence[str]]:
    """Every argv the transport is asked to run (a spy on the real transport)."""
    seen: list[Sequence[str]] = []
    run, stream = transport.run, transport.stream_lines

    async def recorded_run(argv: Sequence[str], **kw: Any) -> Any:
        seen.append(list(argv))
        return await run(argv, **kw)

    async def recorded_stream(argv: Sequence[str], **kw: Any) -> Any:
        seen.append(list(argv))
        return await stream(argv, **kw)

    transport.run = recorded_run  # type: ignore[method-assign]
    transport.stream_lines = recorded_stream  # type: ignore[method-assign]
    return seen


async def test_the_lease_token_is_in_no_processs_cmdline(
        any_transport: LocalTransport | SshTransport, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    host = HostConfig(name="token", address="127.0.0.1", python=sys.executable,
                      run_dir=str(run_dir), lease_grace_s=5.0)
    seen = _record_argv(any_transport)
    async with host_lease("token").hold("test", transport=any_transport, host=host):
        record = json.loads((run_dir / "lease").read_text())
        sha = str(record["token_sha"])
        assert len(sha) == 64
        assert not [c for c in _cmdlines() if _holds(c, sha)]
        assert not list(run_dir.glob("lease-token-*"))  # read and removed by the stream
        assert (run_dir / "lease").stat().st_mode & 0o077 == 0
    assert "released_at" in json.loads((run_dir / "lease").read_text())  # a real release
    commands = [argv[2] for argv in seen if len(argv) > 2]
    assert {"lease_token", "lease", "lease_release"} <= set(commands), commands
    assert not [argv for argv in seen if _holds(" ".join(argv).encode(), sha)]


@pytest.mark.parametrize("shell", ["bash", "fish"])
async def test_a_non_root_user_hands_the_token_over_under_each_login_shell(
        ssh_user: Callable[..., SshUser], shell: str) -> None:
    """The token's stdin hand-over through a non-root account whose login shell parses what
    it is sent (fish's quoting is not POSIX): the lease is taken, held and released, and the
    token is in no argv and no cmdline on the way."""
    user = ssh_user(shell)
    transport = make_user_transport(user, python="/usr/bin/python3")
    await transport.connect()
    try:
        run_dir = user.home / f"plateau-lease-{shell}"
        host = HostConfig(name=f"token-{shell}", address="127.0.0.1", python="/usr/bin/python3",
                          run_dir=str(run_dir), lease_grace_s=5.0)
        seen = _record_argv(transport)
        async with host_lease(host.name).hold("test", transport=transport, host=host):
            sha = str(json.loads((run_dir / "lease").read_text())["token_sha"])
            assert not [c for c in _cmdlines() if _holds(c, sha)]
            assert not list(run_dir.glob("lease-token-*"))
        assert "released_at" in json.loads((run_dir / "lease").read_text())
        assert "lease_token" in [argv[2] for argv in seen if len(argv) > 2]
        assert not [argv for argv in seen if _holds(" ".join(argv).encode(), sha)]
    finally:
        await transport.close()


class _Dripper:
    """A same-account client of the keeper's socket that sends one byte at a time, never a
    whole line, and connects again whenever the keeper closes on it."""

    def __init__(self, sock: Path) -> None:
        self.sock = sock
        self.closed_on = 0  # connections the keeper ended
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> _Dripper:
        self._task = asyncio.create_task(self._drip())
        return self

    async def __aexit__(self, *_exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def _drip(self) -> None:
        while True:
            try:
                reader, writer = await asyncio.open_unix_connection(str(self.sock))
            except OSError:
                await asyncio.sleep(0.05)  # the keeper is gone (or not listening yet)
                continue
            try:
                while not reader.at_eof():
                    writer.write(b"{")
                    await writer.drain()
                    with contextlib.suppress(TimeoutError):
                        await aio.wait_for(reader.read(1), 0.2)
            except OSError:
                pass
            finally:
                writer.close()
            self.closed_on += 1


async def test_a_dripping_client_does_not_keep_the_lease_past_the_grace(
        local_transport: LocalTransport, tmp_path: Path) -> None:
    # The holder's stream goes (as an SSH drop ends it) while a client drips bytes at the
    # keeper: the keeper reads each connection for a bounded time, notices its holder gone,
    # and ends when the grace ends. Before, it read the dripper (1 byte each 0.2 s, up to a
    # 4096-byte line at 5 s a byte) instead: the grace passed and the lease stayed held.
    run_dir = tmp_path / "run"
    run_dir.mkdir(mode=0o700)
    token = secrets.token_hex(16)
    sha = hashlib.sha256(token.encode()).hexdigest()
    await run_host_script(local_transport, sys.executable, "lease_token",
                          {"run_dir": str(run_dir)}, stdin=token)
    stream = await stream_host_script(local_transport, sys.executable, "lease", {
        "run_dir": str(run_dir), "who": {"purpose": "drip test"}, "token_sha": sha,
        "grace": 1.0})
    async for line in stream:
        if json.loads(line).get("state") == "held":
            break
    keeper = int(json.loads((run_dir / "lease").read_text())["host_pid"])
    async with _Dripper(run_dir / "lease.sock") as dripper:
        await asyncio.sleep(0.5)  # the keeper is reading the dripper now
        await stream.close()  # the holder's connection goes: the grace (1 s) starts
        record: dict[str, Any] = {}
        for _ in range(600):  # 30 s of the keeper's read bound (2 s) and grace (1 s), x10
            record = json.loads((run_dir / "lease").read_text())
            if "expired_at" in record:
                break
            await asyncio.sleep(0.05)
        assert "expired_at" in record, "the keeper still holds the lease for a dripper"
        assert dripper.closed_on >= 1  # its connections were ended under it, not left open
    # the keeper is gone and the lock with it: another holder takes the lease at once
    for _ in range(200):
        if not Path(f"/proc/{keeper}").exists():
            break
        await asyncio.sleep(0.05)
    assert not Path(f"/proc/{keeper}").exists()
    async with host_lease("drip").hold("next", transport=local_transport, host=HostConfig(
            name="drip", address="127.0.0.1", python=sys.executable, run_dir=str(run_dir))):
        assert json.loads((run_dir / "lease").read_text())["purpose"] == "next"
