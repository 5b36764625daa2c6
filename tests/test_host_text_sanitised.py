"""Text written by the host never reaches the terminal raw (issue 12, item 10).

Anyone with the host account can edit `server.json` or make a program print escapes: the
record's fields, command output and errors are sanitised where they enter the core (the launch
record and GPU models) and again where the CLI prints.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from console.cli import main
from console.gpu.collector import parse_line
from console.gpu.models import GpuHeader
from tests.support.sshd import SshUser

ESC, BEL, CSI8 = "\x1b", "\x07", "\x9b"
HOSTILE = f"{ESC}]0;pwned{BEL}{ESC}[2J{ESC}[31mred{CSI8}1m{BEL}\u202eevil"


def _dead_pid() -> int:
    """A pid that no process has now (a record with a pid beyond pid_max is no record)."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def _terminal_bytes(text: str) -> list[str]:
    return [c for c in text if c in (ESC, BEL, CSI8, "\u202e")]


@pytest.mark.sshd
@pytest.mark.parametrize("running", [True, False], ids=["running", "stopped"])
def test_server_status_prints_no_escape_from_a_crafted_record(
    running: bool, ssh_user: Callable[..., SshUser], tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    user = ssh_user("dash")
    run_dir = user.home / f"status-{uuid.uuid4().hex[:12]}"
    run_dir.mkdir(mode=0o700)
    owner = user.home.stat()
    os.chown(run_dir, owner.st_uid, owner.st_gid)
    record = {
        # a live pid (this test) makes the record count as running; its port answers nothing
        "pid": os.getpid() if running else _dead_pid(), "pgid": os.getpid(), "port": 9,
        "host": "127.0.0.1", "profile": f"p{HOSTILE}", "argv": ["python", HOSTILE],
        "env_names": [HOSTILE], "log_path": f"/tmp/{HOSTILE}.log",
        "sglang_version": HOSTILE, "state": "ready", "origin": "adopted",
        # what proves the pid is the recorded process (not a reused pid)
        "start_ticks": int(Path(f"/proc/{os.getpid()}/stat").read_text().rsplit(")", 1)[-1]
                           .split()[19]),
        "boot_id": Path("/proc/sys/kernel/random/boot_id").read_text().strip(),
    }
    (run_dir / "server.json").write_text(json.dumps(record))
    config = tmp_path / "config.toml"
    config.write_text(
        f'[[hosts]]\nname = "box"\naddress = "127.0.0.1"\nport = {user.port}\n'
        f'user = "{user.user}"\nidentity_files = ["{user.key}"]\n'
        f'known_hosts_file = "{user.known_hosts}"\nrun_dir = "~/{run_dir.name}"\n'
    )
    try:
        code = main(["--config", str(config), "server", "status", "box"])
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    out, err = capsys.readouterr()
    assert "red" in out and "evil" in out  # the record was read and shown...
    assert _terminal_bytes(out + err) == []  # ...with no escape, BEL or bidi control
    assert code == (0 if running else 3)


def test_gpu_text_from_the_host_is_sanitised() -> None:
    line = json.dumps({
        "type": "header", "host": {"hostname": HOSTILE}, "driver": HOSTILE,
        "gpus": [{"index": 0, "name": f"H200{HOSTILE}", "uuid": HOSTILE}],
    })
    header = parse_line(line)
    assert isinstance(header, GpuHeader)
    assert _terminal_bytes(header.model_dump_json()) == []
    assert header.gpus[0].name is not None and "H200" in header.gpus[0].name
