"""Login scripts that print (a welcome line, a terminal title set without a newline) under each
login shell, over the real sshd: connecting, commands, host helpers, streams and installed
programs read only the command's own output (scripts.OUTPUT_MARK)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from console.server.hostscript import run_host_script
from tests.support.host_fixtures import make_user_transport
from tests.support.sshd import SshUser

pytestmark = pytest.mark.sshd

NOISE = "echo 'Welcome to gpu-box: 8 GPUs, be nice'\nprintf '\\033]0;gpu-box\\007'\n"
RC_FILES = {
    "bash": [".bashrc", ".bash_profile"],
    "zsh": [".zshenv"],
    "fish": [".config/fish/config.fish"],
    "tcsh": [".tcshrc"],
}


def _noisy(user: SshUser, shell: str) -> None:
    account = user.home.stat()
    for name in RC_FILES[shell]:
        path = user.home / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(NOISE)
        for owned in (path, path.parent):
            os.chown(owned, account.st_uid, account.st_gid)


@pytest.mark.parametrize("shell", sorted(RC_FILES))
async def test_commands_read_through_a_noisy_login(
        ssh_user: Callable[..., SshUser], shell: str, tmp_path: Path) -> None:
    user = ssh_user(shell, tag="noisy")
    _noisy(user, shell)
    transport = make_user_transport(user)
    await transport.connect()  # the home probe itself
    try:
        assert await transport.home_dir() == str(user.home)
        result = await transport.run(["printf", "%s\\n", "only this"])
        assert result.ok and result.stdout == "only this\n", result.stdout
        probe = await run_host_script(transport, "/usr/bin/python3", "probe", {"pid": 1})
        assert probe["pid_alive"] is True
        stream = await transport.stream_lines(["printf", "a\\nb\\n"])
        assert [line async for line in stream] == ["a", "b"]
        await stream.close()
        data = await transport.read_file("/etc/hostname")
        assert data == Path("/etc/hostname").read_bytes()
    finally:
        await transport.close()
