"""A run dir another user controls is refused (over the real sshd, two non-root users).

The run dir holds the lease, the launch record (which names the process group `server stop`
signals) and key files. In a directory another user may write or owns, that user could plant a
`lease` symlink (the operator then overwrites a file of theirs) or forge `server.json` (a stop
then signals an unrelated group): the host helper refuses such a run dir, names why, and never
follows a link for its own state files.
"""

from __future__ import annotations

import os
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
