"""The per-connection command helper (console/host/hostd.py) over the real sshd, as non-root
users under several login shells: the login shell's rc files run once per connection, not once
per command (issue 31: `pyenv init` in root's .bashrc made 64 hosts' polls unaffordable)."""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from console import aio
from console.errors import TransportError
from console.host.hostd import CHUNK, WINDOW
from console.host.hostd_client import HelperStream
from console.host.ssh import SshTransport
from tests.support.host_fixtures import make_user_transport
from tests.support.sshd import SshUser

pytestmark = pytest.mark.sshd

RC_FILES = {"bash": ".bashrc", "fish": ".config/fish/config.fish", "zsh": ".zshenv"}


def _count_logins(user: SshUser, shell: str) -> Path:
    """The shell's rc appends a line to a counter file each time a login shell starts."""
    counter = user.home / f"rc-count-{random.randint(0, 10**9)}"
    rc = user.home / RC_FILES[shell]
    rc.parent.mkdir(parents=True, exist_ok=True)
    rc.write_text(f"echo x >> {counter}\n")
    account = user.home.stat()
    for owned in (rc, rc.parent):
        os.chown(owned, account.st_uid, account.st_gid)
    return counter


def _logins(counter: Path) -> int:
    return len(counter.read_text().splitlines()) if counter.exists() else 0


@pytest.mark.parametrize("shell", sorted(RC_FILES))
async def test_the_login_rc_runs_once_per_connection_not_per_command(
        ssh_user: Callable[..., SshUser], shell: str) -> None:
    user = ssh_user(shell, tag="rc")
    counter = _count_logins(user, shell)
    transport = make_user_transport(user)
    try:
        await transport.connect()
        after_connect = _logins(counter)
        results = await asyncio.gather(*(transport.run(["echo", str(i)]) for i in range(20)))
        assert [r.stdout for r in results] == [f"{i}\n" for i in range(20)]
        target = f"{user.home}/.plateau-helper-test/file"
        await transport.write_file(target, b"\x00\xffdata", mode=0o600)
        assert await transport.read_file(target) == b"\x00\xffdata"
        async with await transport.stream_lines(["printf", "a\\nb\\n"]) as stream:
            assert [line async for line in stream] == ["a", "b"]
        assert after_connect == 1, "the helper's start is the connection's one login"
        assert _logins(counter) == 1, "a command paid the login shell's rc again"
    finally:
        await transport.close()
        counter.unlink(missing_ok=True)
        (user.home / RC_FILES[shell]).unlink(missing_ok=True)


async def test_without_the_python_commands_still_run_one_channel_each(
        ssh_user: Callable[..., SshUser]) -> None:
    transport = make_user_transport(ssh_user("bash"), python="/nonexistent/python3")
    details: list[str] = []
    transport.subscribe(lambda event: details.append(f"{event.kind} {event.detail}"))
    try:
        await transport.connect()
        assert "no command helper (/nonexistent/python3" in transport.helper_note
        assert any("one login shell, per command" in d for d in details if d.startswith("conn"))
        assert (await transport.run(["echo", "fallback"])).stdout == "fallback\n"
        async with await transport.stream_lines(["echo", "s"]) as stream:
            assert not isinstance(stream, HelperStream)
            assert [line async for line in stream] == ["s"]
    finally:
        await transport.close()


async def test_a_stream_nobody_reads_holds_its_command_not_the_others(
        ssh_user: Callable[..., SshUser]) -> None:
    """Flow control: the producer blocks at its pipe (memory bounded), other commands on the
    same helper still answer, and once read again no line is lost."""
    transport = make_user_transport(ssh_user("bash"))
    lines = 300_000  # ~ 2 MB: far more than the WINDOW bytes in flight
    try:
        await transport.connect()
        stream = await transport.stream_lines(["seq", str(lines)])
        assert isinstance(stream, HelperStream)
        iterator = stream.__aiter__()
        assert await iterator.__anext__() == "1"
        await asyncio.sleep(0.5)  # the helper would push everything now without a window
        queued: list[bytes | None] = list(stream._chunks._queue)  # type: ignore[attr-defined]
        buffered = sum(len(chunk) for chunk in queued if chunk is not None)
        assert buffered <= WINDOW + CHUNK
        quick = await aio.wait_for(transport.run(["echo", "still here"]), 30)
        assert quick.stdout == "still here\n"
        rest = [line async for line in iterator]
        assert len(rest) == lines - 1 and rest[-1] == str(lines)
        assert stream.exit_status == 0
        await stream.close()
    finally:
        await transport.close()


def _alive(marker: str) -> list[str]:
    found = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    return found.stdout.split()


async def test_a_timed_out_command_loses_its_whole_process_group(
        ssh_user: Callable[..., SshUser]) -> None:
    transport = make_user_transport(ssh_user("bash"))
    marker = f"{random.randint(100000, 999999)}.{random.randint(10, 99)}"
    try:
        await transport.connect()
        with pytest.raises(TransportError, match=r"timed out after 0\.5 s"):
            await transport.run(["sh", "-c", f"sleep {marker} & sleep {marker}; wait"],
                                timeout=0.5)
        for _ in range(100):
            if not _alive(f"sleep {marker}"):
                break
            await asyncio.sleep(0.05)
        assert not _alive(f"sleep {marker}")
        assert (await transport.run(["echo", "next"])).stdout == "next\n"
    finally:
        await transport.close()


async def test_output_that_looks_like_the_protocol_comes_back_verbatim(
        ssh_user: Callable[..., SshUser]) -> None:
    transport = make_user_transport(ssh_user("fish"))
    text = '{"id": 1, "exit": 0}\nplateau-output-begins-7c1f\n\x1b[31m{"hello": 1}\n'
    try:
        await transport.connect()
        result = await transport.run(["printf", "%s", text])
        assert result.stdout == text and result.ok
        missing = await transport.run(["/nonexistent/prog"])
        assert missing.exit_status == 127 and "nonexistent" in missing.stderr
    finally:
        await transport.close()


async def test_closing_the_transport_ends_the_helper(
        ssh_user: Callable[..., SshUser]) -> None:
    transport: SshTransport = make_user_transport(ssh_user("bash"))
    await transport.connect()
    helper = transport._helper
    assert helper is not None and helper.alive and helper.pid > 0
    assert Path(f"/proc/{helper.pid}").exists()
    await transport.close()
    for _ in range(100):
        if not Path(f"/proc/{helper.pid}").exists():
            break
        await asyncio.sleep(0.05)
    assert not Path(f"/proc/{helper.pid}").exists()


PROGRAM = """
import sys
print("preloaded" if "json" in sys.modules else "fresh")
print(sys.argv[1:])
data = sys.stdin.read()
print("read", len(data), data[:5])
print("to stderr", file=sys.stderr)
if sys.argv[1] == "raise":
    raise RuntimeError("boom")
if sys.argv[1] == "say":
    sys.exit("said why")
sys.exit(int(sys.argv[1]))
"""


@pytest.mark.parametrize("shell", ["bash", "fish"])
async def test_our_host_programs_run_in_a_fork_as_a_new_interpreter_would(
        ssh_user: Callable[..., SshUser], shell: str) -> None:
    """`PYTHON PROGRAM ARGS` of an installed program runs in a fork of the helper (no new
    interpreter: modules the helper loaded are there) with the same argv, stdin, stdout,
    stderr and exit status as a fresh `python3 PROGRAM` (the same file run by path)."""
    transport = make_user_transport(ssh_user(shell), python="/usr/bin/python3")
    try:
        await transport.connect()
        path = await transport.install_program("plateau-test-prog", PROGRAM)
        fresh_copy = f"{path}.copy.py"  # not ours: a plain exec, a new interpreter
        await transport.run(["cp", path, fresh_copy])
        for args, status in ((["3"], 3), (["0"], 0), (["raise"], 1), (["say"], 1)):
            forked = await transport.run(["/usr/bin/python3", path, *args], input="héllo\n")
            fresh = await transport.run(["/usr/bin/python3", fresh_copy, *args],
                                        input="héllo\n")
            assert forked.stdout.splitlines()[0] == "preloaded"
            assert fresh.stdout.splitlines()[0] == "fresh"
            assert forked.stdout.splitlines()[1:] == fresh.stdout.splitlines()[1:]
            assert forked.exit_status == fresh.exit_status == status
            assert forked.stderr.replace(path, "P") == fresh.stderr.replace(fresh_copy, "P")
        boom = await transport.run(["/usr/bin/python3", path, "raise"])
        assert "RuntimeError: boom" in boom.stderr and boom.exit_status == 1
        said = await transport.run(["/usr/bin/python3", path, "say"])
        assert said.stderr.splitlines()[-1] == "said why"
    finally:
        await transport.close()


async def test_a_replaced_program_runs_its_new_text(ssh_user: Callable[..., SshUser]) -> None:
    """The helper compiles a program once, keyed by the file (inode, size, mtime): a copy
    replaced in place runs its new text, not the cached code."""
    transport = make_user_transport(ssh_user("bash"), python="/usr/bin/python3")
    try:
        await transport.connect()
        path = await transport.install_program("plateau-test-swap", "print('first')\n")
        assert (await transport.run(["/usr/bin/python3", path])).stdout == "first\n"
        assert (await transport.run(["/usr/bin/python3", path])).stdout == "first\n"
        await transport.write_file(path, b"print('second')\n", mode=0o600)
        assert (await transport.run(["/usr/bin/python3", path])).stdout == "second\n"
    finally:
        await transport.close()


async def test_the_helper_installs_programs_privately_or_refuses(
        ssh_user: Callable[..., SshUser]) -> None:
    """install_program through the helper keeps scripts.INSTALL_PROGRAM's rules: every
    directory it makes is 0700, the copy 0600 and exact; a directory the user does not own is
    refused with the host's reason (its chmod fails), nothing written."""
    user = ssh_user("fish")
    root = user.home / f"deep-{random.randint(0, 10**9)}"
    transport = make_user_transport(user, run_dir=f"{root}/a/b")
    try:
        await transport.connect()
        path = Path(await transport.install_program("plateau-test-deep", "print(1)\n"))
        assert path.read_text() == "print(1)\n" and path.stat().st_mode & 0o777 == 0o600
        for directory in (root, root / "a", root / "a" / "b", root / "a" / "b" / "bin"):
            assert directory.stat().st_mode & 0o777 == 0o700, directory
        foreign = root / "foreign"
        (foreign / "bin").mkdir(parents=True)  # made by root: not the user's
        os.chmod(foreign, 0o755)
        other = make_user_transport(user, run_dir=str(foreign))
        await other.connect()
        try:
            with pytest.raises(TransportError, match=r"cannot install .*(not permitted|Operation)"):
                await other.install_program("plateau-test-foreign", "print(2)\n")
            assert list((foreign / "bin").iterdir()) == []
        finally:
            await other.close()
    finally:
        await transport.close()
        subprocess.run(["rm", "-rf", str(root)], check=False)


IMPORTING = """
import sys
print("colorsys", "preloaded" if "colorsys" in sys.modules else "fresh")
print("neighbour", "preloaded" if "plateau_neighbour" in sys.modules else "fresh")
import colorsys
import plateau_neighbour
print(colorsys.rgb_to_hsv(1.0, 0.0, 0.0), plateau_neighbour.VALUE)
"""


@pytest.mark.parametrize("shell", ["bash", "fish"])
async def test_a_programs_stdlib_imports_are_loaded_once_in_the_helper(
        ssh_user: Callable[..., SshUser], shell: str) -> None:
    """A forked program finds the standard-library modules it imports at its top level
    already loaded by the helper (each fork importing `socket` tripled a status poll's
    cost); a module that is not the standard library's (here one beside the program) is
    still imported by the program itself, from the program's directory as python3 would."""
    transport = make_user_transport(ssh_user(shell), python="/usr/bin/python3")
    try:
        await transport.connect()
        path = await transport.install_program("plateau-test-imports", IMPORTING)
        neighbour = f"{path.rsplit('/', 1)[0]}/plateau_neighbour.py"
        await transport.write_file(neighbour, b"VALUE = 7\n", mode=0o600)
        result = await transport.run(["/usr/bin/python3", path])
        assert result.exit_status == 0, result.stderr
        assert result.stdout.splitlines() == [
            "colorsys preloaded", "neighbour fresh", "(0.0, 1.0, 1.0) 7"]
    finally:
        await transport.close()
