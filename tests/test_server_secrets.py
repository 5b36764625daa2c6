"""Secrets on the host, checked by a second non-root user over the real sshd: the operator's
run dir is 0700, logs 0600, and the API key is on no argv; so the other user can read it
nowhere (issue 12 figure: secrets readable by another user, must be 0)."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from console.config_models import HostConfig, ServerProfile
from console.server.discovery import FlagDiscovery
from console.server.lifecycle import LifecycleOptions, ServerLifecycle
from tests.support.host_fixtures import make_user_transport
from tests.support.server_fixtures import free_port
from tests.support.sshd import SshUser

pytestmark = pytest.mark.sshd

SYSTEM_PYTHON = "/usr/bin/python3"  # the project's venv is not reachable by other users

# Run as the other user, the key on stdin: which processes' argv/environ and which files
# under the run dir show it?
CHECK = r"""
import os, sys
key = sys.stdin.read().encode()
run_dir = sys.argv[1]
found = []
for pid in os.listdir("/proc"):
    if pid.isdigit() and int(pid) != os.getpid():
        for part in ("cmdline", "environ"):
            try:
                with open("/proc/%s/%s" % (pid, part), "rb") as f:
                    if key in f.read():
                        found.append("/proc/%s/%s" % (pid, part))
            except OSError:
                pass
for root, dirs, files in os.walk(run_dir):
    for name in files:
        try:
            with open(os.path.join(root, name), "rb") as f:
                if key in f.read():
                    found.append(os.path.join(root, name))
        except OSError:
            pass
print(len(found))
print("\n".join(found))
"""


@pytest.fixture
def fake_sglang(tmp_path: Path) -> Iterator[Path]:
    shared = Path(tempfile.mkdtemp(prefix="plateau-fake-sglang-", dir="/tmp"))
    shared.chmod(0o755)
    script = shared / "fake_sglang.py"
    shutil.copy(Path(__file__).parent / "support" / "fake_sglang.py", script)
    script.chmod(0o644)
    yield script
    shutil.rmtree(shared, ignore_errors=True)


async def test_other_user_reads_no_secret(
    ssh_user: Callable[..., SshUser], fake_sglang: Path, tmp_path: Path
) -> None:
    operator, other = ssh_user("bash"), ssh_user("bash", tag="2")
    run_dir = f"{operator.home}/plateau-secrets-{uuid.uuid4().hex[:8]}"
    host = HostConfig(name="secrets", address="127.0.0.1", port=operator.port,
                      user=operator.user, python=SYSTEM_PYTHON, run_dir=run_dir)
    secret = "sk-secret-" + uuid.uuid4().hex
    profile = ServerProfile(launch=[SYSTEM_PYTHON, str(fake_sglang)], model_path="m",
                            port=free_port(), api_key_env="PLATEAU_TEST_KEY")
    mine = make_user_transport(operator)
    theirs = make_user_transport(other)
    await mine.connect()
    await theirs.connect()
    life = ServerLifecycle(mine, host, discovery=FlagDiscovery(mine, host,
                           cache_dir=tmp_path / "flags"),
                           options=LifecycleOptions(startup_timeout_s=60, poll_interval_s=0.1),
                           local_env={"PLATEAU_TEST_KEY": secret})
    try:
        await life.start("keyed", profile)
        log = (await mine.run(["cat", f"{run_dir}/current.log"])).stdout
        assert secret in log  # the server did get the key (and dumped it, like SGLang)
        checked = await theirs.run([SYSTEM_PYTHON, "-c", CHECK, run_dir], input=secret)
        assert checked.ok, checked.stderr
        count, *where = checked.stdout.splitlines()
        assert int(count) == 0, where  # issue 12 figure: must be 0
        modes = await mine.run(["stat", "-L", "-c", "%a %n", run_dir, f"{run_dir}/logs",
                                f"{run_dir}/current.log", f"{run_dir}/server.json"])
        lines = modes.stdout.split("\n")
        assert lines[0].startswith("700 ") and lines[1].startswith("700 "), modes.stdout
        assert lines[2].startswith("600 ") and lines[3].startswith("600 "), modes.stdout
    finally:
        await life.stop()
        await mine.run(["rm", "-rf", run_dir])
        await mine.close()
        await theirs.close()
