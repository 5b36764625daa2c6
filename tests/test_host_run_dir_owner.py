"""A run dir another user controls is refused (over the real sshd, two non-root users).

The run dir holds the lease, the launch record (which names the process group `server stop`
signals) and key files. In a directory another user may write or owns, that user could plant a
`lease` symlink (the operator then overwrites a file of theirs) or forge `server.json` (a stop
then signals an unrelated group): the host helper refuses such a run dir, names why, and never
follows a link for its own state files.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from console.config_models import HostConfig
from console.errors import PlateauError
from console.server.hostscript import HostScriptError, run_host_script
from console.server.lease import host_lease
from tests.support.host_fixtures import make_user_transport
from tests.support.sshd import SshUser

pytestmark = pytest.mark.sshd
PYTHON = "/usr/bin/python3"


def _owned_by(path: Path, user: SshUser, mode: int) -> Path:
    path.mkdir()
    account = user.home.stat()
    os.chown(path, account.st_uid, account.st_gid)
    path.chmod(mode)
    return path


@pytest.fixture
def shared_root() -> Iterator[Path]:
    root = Path("/tmp") / f"plateau-owner-{uuid.uuid4().hex[:8]}"
    root.mkdir(mode=0o755)
    yield root
    for dirpath, dirnames, filenames in os.walk(root, topdown=False):
        for name in filenames:
            Path(dirpath, name).unlink(missing_ok=True)
        for name in dirnames:
            Path(dirpath, name).rmdir()
    root.rmdir()


async def test_run_dir_in_another_users_directory_is_refused(
        ssh_user: Callable[..., SshUser], shared_root: Path) -> None:
    operator, other = ssh_user("bash"), ssh_user("zsh", tag="2")
    theirs = _owned_by(shared_root / "theirs", other, 0o777)
    # The attack the refusal prevents: the other user's `lease` link to the operator's file.
    victim = operator.home / f"victim-{uuid.uuid4().hex[:6]}"
    victim.write_text("precious\n")
    planted = _owned_by(theirs / "run", other, 0o777)
    (planted / "lease").symlink_to(victim)
    mine = make_user_transport(operator)
    await mine.connect()
    try:
        for command, args in (("prepare", {"run_dir": str(planted), "stamp": "s",
                                           "profile": "p"}),
                              ("lease", {"run_dir": str(planted), "who": {}}),
                              ("write", {"path": f"{planted}/server.json"})):
            with pytest.raises(HostScriptError, match=r"refused: run_dir .* uid \d+"):
                await run_host_script(mine, PYTHON, command, args, stdin="{}")
        # Even a run dir of the operator's own, inside the other user's directory: refused.
        host = HostConfig(name="owner", address="127.0.0.1", port=operator.port,
                          user=operator.user, python=PYTHON, run_dir=f"{theirs}/mine")
        with pytest.raises(PlateauError, match=r"refused: run_dir .*theirs, which uid"):
            async with host_lease("owner").hold("test", transport=mine, host=host):
                pass
        assert victim.read_text() == "precious\n"
    finally:
        await mine.close()


async def test_shared_non_sticky_parent_is_refused_but_sticky_tmp_and_home_are_fine(
        ssh_user: Callable[..., SshUser], shared_root: Path) -> None:
    operator = ssh_user("bash")
    open_parent = shared_root / "open"
    open_parent.mkdir()
    open_parent.chmod(0o777)  # root's, writable by all, not sticky: anyone may rename entries
    mine = make_user_transport(operator)
    await mine.connect()
    try:
        with pytest.raises(HostScriptError, match="others may write"):
            await run_host_script(mine, PYTHON, "prepare",
                                  {"run_dir": f"{open_parent}/run", "stamp": "s", "profile": "p"})
        for run_dir in (f"/tmp/plateau-own-{uuid.uuid4().hex[:6]}", f"{operator.home}/.plateau-t"):
            prepared = await run_host_script(mine, PYTHON, "prepare",
                                             {"run_dir": run_dir, "stamp": "s", "profile": "p"})
            assert prepared["run_dir"] == run_dir
            await mine.run(["rm", "-rf", run_dir])
    finally:
        await mine.close()


async def test_a_run_dir_through_another_users_symlink_is_refused(
        ssh_user: Callable[..., SshUser], shared_root: Path) -> None:
    # This host follows anyone's links in sticky directories (fs.protected_symlinks may be
    # 0): a link the other user owns can be pointed elsewhere between Plateau's runs, so the
    # operator's lease, launch record and key files would go wherever that user says.
    operator, other = ssh_user("bash"), ssh_user("zsh", tag="2")
    shared_root.chmod(0o1777)  # as /tmp: anyone may add a link, only its owner change it
    target = operator.home / f"runs-{uuid.uuid4().hex[:6]}"
    target.mkdir(mode=0o700)
    account = operator.home.stat()
    os.chown(target, account.st_uid, account.st_gid)
    theirs = shared_root / "theirs-link"
    theirs.symlink_to(target)
    os.lchown(theirs, other.home.stat().st_uid, other.home.stat().st_gid)
    mine = shared_root / "my-link"  # a link of the operator's own: followed as before
    mine.symlink_to(target)
    os.lchown(mine, account.st_uid, account.st_gid)
    chain = shared_root / "my-chain"  # the operator's own link to theirs (relative, via ..)
    chain.symlink_to(f"../{shared_root.name}/theirs-link")
    os.lchown(chain, account.st_uid, account.st_gid)
    open_dir = shared_root / "open"  # root's, writable by all, not sticky
    open_dir.mkdir(mode=0o777)
    open_dir.chmod(0o777)
    (open_dir / "runs").mkdir()
    os.chown(open_dir / "runs", account.st_uid, account.st_gid)
    into_open = shared_root / "my-link-into-open"
    into_open.symlink_to(open_dir / "runs")
    os.lchown(into_open, account.st_uid, account.st_gid)
    transport = make_user_transport(operator)
    await transport.connect()
    try:
        for command, link in (("prepare", theirs), ("lease_token", theirs), ("prepare", chain)):
            with pytest.raises(HostScriptError) as refused:
                await run_host_script(transport, PYTHON, command,
                                      {"run_dir": f"{link}/run", "stamp": "s", "profile": "p"},
                                      stdin="0" * 32)
            said = str(refused.value)
            assert f"{theirs}, a symbolic link uid {other.home.stat().st_uid} owns" in said
            assert len(said.splitlines()) == 1
        with pytest.raises(HostScriptError, match=f"inside {open_dir}, which others may write"):
            await run_host_script(transport, PYTHON, "prepare",
                                  {"run_dir": f"{into_open}/run", "stamp": "s", "profile": "p"})
        assert not (target / "run").exists()  # refused before anything was made
        prepared = await run_host_script(transport, PYTHON, "prepare",
                                         {"run_dir": f"{mine}/run", "stamp": "s",
                                          "profile": "p"})
        assert prepared["run_dir"] == f"{mine}/run" and (target / "run").is_dir()
    finally:
        await transport.close()
        subprocess.run(["rm", "-rf", str(target)], check=False)
        for link in (theirs, mine, chain, into_open):  # the fixture's walk would enter them
            link.unlink()
