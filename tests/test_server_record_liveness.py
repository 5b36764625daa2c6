"""Is the recorded server alive? The status poll's one host-script run (the record read with its
process probed) against real processes: a leader gone with its group still running, a pid that
is alive but not the recorded process, and a group gone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from console.config_models import HostConfig
from console.host.local import LocalTransport
from console.server.lifecycle import ServerLifecycle
from console.server.records import LaunchRecord


def _record(run_dir: Path, pid: int, pgid: int, start_ticks: int) -> None:
    record = LaunchRecord(pid=pid, pgid=pgid, port=1, profile="p", argv=["x"], state="ready",
                          start_ticks=start_ticks, boot_id="no-such-boot", origin="adopted")
    (run_dir / "server.json").write_text(record.model_dump_json())


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return True
    return state == "Z"


async def test_a_group_that_outlives_its_leader_is_the_server_still(tmp_path: Path) -> None:
    host = HostConfig(name="h", local=True, python=sys.executable, run_dir=str(tmp_path))
    transport = LocalTransport("h", run_dir=str(tmp_path))
    await transport.connect()
    # The leader (sh) starts a member (sleep) in its new session, says its pid and exits.
    leader = subprocess.Popen(["sh", "-c", "sleep 60 & echo $!"], stdout=subprocess.PIPE,
                              start_new_session=True, text=True)
    assert leader.stdout is not None
    member = int(leader.stdout.readline())
    leader.wait()
    try:
        life = ServerLifecycle(transport, host)
        _record(tmp_path, leader.pid, leader.pid, start_ticks=1)
        assert (await life.status(check_health=False)).running  # the group still runs
        # alive, but not the recorded process (other start time): not the server, and its
        # group is not asked about
        _record(tmp_path, os.getpid(), os.getpgid(0), start_ticks=1)
        assert not (await life.status(check_health=False)).running
        os.killpg(leader.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while not _gone(member) and time.monotonic() < deadline:
            time.sleep(0.02)
        _record(tmp_path, leader.pid, leader.pid, start_ticks=1)
        assert not (await life.status(check_health=False)).running  # the group is gone
    finally:
        leader.stdout.close()
        if not _gone(member):
            os.kill(member, signal.SIGKILL)
        await transport.close()


async def test_a_hostile_record_is_no_server_and_no_crash(tmp_path: Path) -> None:
    """The record is the host's text: absurd, negative, non-numeric or missing pids and
    groups are no running server (the host script's probe and the console's model both
    refuse them), never an exception out of the status poll."""
    host = HostConfig(name="h", local=True, python=sys.executable, run_dir=str(tmp_path))
    transport = LocalTransport("h", run_dir=str(tmp_path))
    await transport.connect()
    try:
        life = ServerLifecycle(transport, host)
        base = {"port": 1, "profile": "p", "argv": ["x"], "state": "ready", "start_ticks": 1,
                "boot_id": "b", "origin": "adopted"}
        for fields in ({"pid": 10 ** 400, "pgid": 10 ** 400}, {"pid": -1, "pgid": -1},
                       {"pid": "NaN", "pgid": 1}, {"pid": 1e308, "pgid": 1e308},
                       {"pgid": 5}, {"pid": 0, "pgid": 0}):
            (tmp_path / "server.json").write_text(json.dumps({**base, **fields}))
            status = await life.status(check_health=False)
            assert not status.running, fields
        (tmp_path / "server.json").write_text("{not json")
        assert not (await life.status(check_health=False)).running
    finally:
        await transport.close()
