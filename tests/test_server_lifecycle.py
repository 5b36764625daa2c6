"""The restart state machine against the simulator, through LocalTransport and a real sshd."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from console import aio
from console.host.local import LocalTransport
from console.host.ssh import SshTransport
from console.server.events import (
    CommandShown,
    LifecycleDone,
    LifecycleEvent,
    LifecycleFailed,
    Phase,
    PhaseFinished,
    PhaseProgress,
    StartupStep,
)
from console.server.lease import HostBusy, host_lease
from console.server.lifecycle import LifecycleError
from tests.support.server_fixtures import SIM_LAUNCH, ServerEnv


def server_info(port: int) -> dict[str, Any]:
    response = httpx.get(f"http://127.0.0.1:{port}/server_info", timeout=5, trust_env=False)
    info: dict[str, Any] = response.json()
    return info


def pid_alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def phases_finished(events: Iterable[LifecycleEvent]) -> list[str]:
    return [e.phase.value for e in events if isinstance(e, PhaseFinished)]


@pytest.mark.slow
@pytest.mark.sshd
async def test_restart_with_changed_flags_preserves_logs(
    server_env: ServerEnv, any_transport: LocalTransport | SshTransport
) -> None:
    life = server_env.lifecycle(any_transport)
    first = await life.restart(
        "triton", server_env.profile(**{"moe-runner-backend": "triton"}), server_env.record_event
    )
    assert server_info(server_env.port)["moe_runner_backend"] == "triton"
    events = server_env.events
    server_env.events = []
    second = await life.restart(
        "cutlass", server_env.profile(**{"moe-runner-backend": "cutlass"}),
        server_env.record_event,
    )
    info = server_info(server_env.port)
    assert info["moe_runner_backend"] == "cutlass"
    assert second.pid != first.pid and not pid_alive(first.pid)
    assert second.sglang_version == info["version"] == "0.5.23"
    # every phase ran, in order, and the startup steps came from the log
    assert phases_finished(server_env.events) == [
        "validate", "stop", "verify-stopped", "launch", "startup", "ready"
    ]
    steps = [e.step for e in events if isinstance(e, PhaseProgress) and e.step]
    assert steps[-1] == StartupStep.READY and StartupStep.LOAD_WEIGHTS in steps
    shown = [e for e in server_env.events if isinstance(e, CommandShown)]
    assert "--moe-runner-backend cutlass" in shown[0].command
    # old log kept, new one separate, current.log points at the new one
    logs = server_env.logs()
    assert len(logs) == 2 and "triton" in logs[0].read_text()
    assert "cutlass" in logs[1].name
    assert os.path.realpath(server_env.root / "run" / "current.log") == str(logs[1])
    record = json.loads((server_env.root / "run" / "server.json").read_text())
    assert record["pid"] == second.pid and record["state"] == "ready"
    assert record["profile"] == "cutlass"
    status = await life.status()
    assert status.running and status.health == "ready" and status.version == "0.5.23"
    stopped = await life.stop()
    assert stopped is not None and not pid_alive(second.pid)
    assert not (await life.status()).running


@pytest.mark.slow
@pytest.mark.sshd
async def test_invalid_flag_rejected_before_anything_stops(
    server_env: ServerEnv, any_transport: LocalTransport | SshTransport
) -> None:
    life = server_env.lifecycle(any_transport)
    running = await life.start("a", server_env.profile())
    # removed in 0.5.23 with no flag of that release to translate it to
    bad = server_env.profile(**{"enforce-piecewise-cuda-graph": True})
    with pytest.raises(LifecycleError) as caught:
        await life.restart("bad", bad, server_env.record_event)
    assert caught.value.phase is Phase.VALIDATE
    assert "--enforce-piecewise-cuda-graph is not a flag" in str(caught.value)
    assert phases_finished(server_env.events) == []  # not even validate finished
    assert pid_alive(running.pid)
    assert len(server_env.logs()) == 1
    assert (await life.status()).health == "ready"
    await life.stop()


@pytest.mark.slow
@pytest.mark.sshd
async def test_startup_crash_reported_with_log_lines(
    server_env: ServerEnv, any_transport: LocalTransport | SshTransport
) -> None:
    life = server_env.lifecycle(any_transport)
    oom = server_env.profile(**{"sim-weights-gb": 900.0})
    with pytest.raises(LifecycleError) as caught:
        await life.restart("huge", oom, server_env.record_event)
    error = caught.value
    assert error.phase is Phase.STARTUP
    assert "out of GPU memory" in error.reason
    assert any("CUDA out of memory" in line for line in error.log_lines)
    failed = [e for e in server_env.events if isinstance(e, LifecycleFailed)]
    assert failed and failed[0].log_lines == error.log_lines
    record = json.loads((server_env.root / "run" / "server.json").read_text())
    assert record["state"] == "failed" and not pid_alive(record["pid"])
    assert not (await life.status()).running


async def test_port_held_by_another_program_is_not_touched(
        server_env: ServerEnv, local_transport: LocalTransport) -> None:
    life = server_env.lifecycle(local_transport, port_free_timeout_s=0.5)
    holder = socket.socket()
    holder.bind(("127.0.0.1", server_env.port))
    holder.listen()
    try:
        with pytest.raises(LifecycleError) as caught:
            await life.restart("a", server_env.profile())
        assert caught.value.phase is Phase.STOP
        assert "Plateau did not start" in caught.value.reason
        assert server_env.logs() == []
    finally:
        holder.close()


@pytest.mark.slow
async def test_restart_refused_while_a_sweep_holds_the_lease(
        server_env: ServerEnv, local_transport: LocalTransport) -> None:
    life = server_env.lifecycle(local_transport)
    await life.start("a", server_env.profile())
    lease = host_lease(server_env.host.name)
    holding, release = asyncio.Event(), asyncio.Event()

    async def sweep() -> None:  # the sweep runner holds the lease in its own task
        async with lease.hold("sweep quick on a"):
            holding.set()
            await release.wait()

    sweeper = asyncio.create_task(sweep())
    await holding.wait()
    with pytest.raises(HostBusy) as caught:
        await life.restart("b", server_env.profile(**{"moe-runner-backend": "triton"}))
    assert "sweep quick on a" in str(caught.value)
    assert len(server_env.logs()) == 1
    # queued instead: waits until the sweep releases, then runs
    queued = asyncio.create_task(
        life.restart("b", server_env.profile(**{"moe-runner-backend": "triton"}), wait=True)
    )
    await asyncio.sleep(0.3)
    assert not queued.done() and len(server_env.logs()) == 1
    release.set()
    await sweeper
    record = await aio.wait_for(queued, 30)
    assert record.profile == "b" and len(server_env.logs()) == 2
    # and the other way round: a sweep cannot start while a restart holds the lease
    restart = asyncio.create_task(life.restart("c", server_env.profile()))
    await asyncio.sleep(0.05)
    with pytest.raises(HostBusy):
        async with lease.hold("sweep"):
            pass
    await restart
    await life.stop()


async def test_adopts_a_server_started_by_hand(
    server_env: ServerEnv, local_transport: LocalTransport, tmp_path: Path
) -> None:
    log = tmp_path / "by-hand.log"
    argv = [*SIM_LAUNCH, "--model-path", "hand/Model", "--port", str(server_env.port),
            "--sim-startup-seconds", "0", "--sim-state-file", str(tmp_path / "s.json")]
    with log.open("ab") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        for _ in range(200):
            try:
                if httpx.get(f"http://127.0.0.1:{server_env.port}/ready", timeout=1,
                             trust_env=False).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.05)
        life = server_env.lifecycle(local_transport)
        assert not (await life.status()).running  # no record yet
        # never adopted implicitly: a restart refuses and names it
        with pytest.raises(LifecycleError, match=f"pid {process.pid} .*did not start"):
            await life.restart("mine", server_env.profile())
        assert process.poll() is None
        # the operator sees its command line, then adopts it by pid
        (shown,) = await life.listeners(server_env.port)
        assert shown["pid"] == process.pid and "hand/Model" in shown["argv"]
        record = await life.adopt(server_env.port, process.pid)
        assert record.pid == process.pid and record.origin == "adopted"
        assert record.log_path == str(log)
        status = await life.status()
        assert status.running and status.record is not None
        assert status.record.profile == "adopted"
        # a restart stops the adopted server and launches ours
        new = await life.restart("mine", server_env.profile())
        assert process.wait(timeout=10) is not None
        assert new.pid != process.pid and new.origin == "launched"
        await life.stop()
    finally:
        if process.poll() is None:
            process.kill()


async def test_cancel_during_startup_leaves_host_clean(
    server_env: ServerEnv, local_transport: LocalTransport
) -> None:
    life = server_env.lifecycle(local_transport)
    task = asyncio.create_task(
        life.restart("slow", server_env.profile(startup_seconds=20.0), server_env.record_event)
    )
    for _ in range(3000):  # generous: a loaded machine (the lease and launch are processes)
        if any(isinstance(e, PhaseFinished) and e.phase is Phase.LAUNCH
               for e in server_env.events):
            break
        await asyncio.sleep(0.02)
    record = await life.read_record()
    assert record is not None and pid_alive(record.pid)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not pid_alive(record.pid)
    final = await life.read_record()
    assert final is not None and final.state == "failed"
    assert not host_lease(server_env.host.name).busy


async def test_api_key_reaches_server_but_no_record_or_event(
        server_env: ServerEnv, local_transport: LocalTransport) -> None:
    secret = "sk-test-0123456789"
    life = server_env.lifecycle(local_transport)
    life._local_env = {"PLATEAU_TEST_KEY": secret}
    profile = server_env.profile().model_copy(update={"api_key_env": "PLATEAU_TEST_KEY"})
    await life.restart("keyed", profile, server_env.record_event)
    record_text = (server_env.root / "run" / "server.json").read_text()
    assert secret not in record_text and "PLATEAU_TEST_KEY" in record_text
    assert all(secret not in repr(e) for e in server_env.events)
    # the server got it (through a --config file SGLang reads at startup), not on its argv
    pid = json.loads(record_text)["pid"]
    assert secret.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes()
    assert secret.encode() not in Path(f"/proc/{pid}/environ").read_bytes()
    base = f"http://127.0.0.1:{server_env.port}"
    assert httpx.get(f"{base}/v1/models", trust_env=False).status_code == 401
    assert httpx.get(f"{base}/v1/models", trust_env=False,
                     headers={"Authorization": f"Bearer {secret}"}).status_code == 200
    assert list((server_env.root / "run").glob("*secret*")) == []  # read once, then gone
    done = [e for e in server_env.events if isinstance(e, LifecycleDone)]
    assert done and done[0].action == "restart"
    await life.stop()


def test_missing_api_key_fails_before_stopping(server_env: ServerEnv) -> None:
    from console.host.local import LocalTransport

    async def scenario() -> None:
        life = server_env.lifecycle(LocalTransport("x"))
        life._local_env = {}
        profile = server_env.profile().model_copy(update={"api_key_env": "NOPE_KEY"})
        with pytest.raises(LifecycleError, match="NOPE_KEY is not set"):
            await life.restart("k", profile)
        assert server_env.logs() == []

    asyncio.run(scenario())


@pytest.mark.slow
def test_plateau_server_demo_cli(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_CACHE_HOME": str(tmp_path / "cache")}

    def plateau(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "console.cli", "server", *args, "--demo"],
                              capture_output=True, text=True, env=env, timeout=60)

    assert plateau("status").returncode == 3
    started = plateau("start", "--profile", "triton-moe")
    try:
        assert started.returncode == 0, started.stderr
        assert "▸ startup" in started.stdout and "--moe-runner-backend triton" in started.stdout
        again = plateau("start")
        assert again.returncode != 0 and "already running" in again.stderr
        status = plateau("status")
        assert status.returncode == 0 and "READY" in status.stdout
        assert "triton-moe" in status.stdout and "sglang 0.5.23" in status.stdout
    finally:
        stopped = plateau("stop")
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    bad = plateau("restart", "--profile", "nope")
    assert bad.returncode == 2 and "unknown profile" in bad.stderr


async def test_liveness_status_asks_no_http(
    server_env: ServerEnv, local_transport: LocalTransport
) -> None:
    """A poller can check liveness without writing access lines into the server's log."""
    life = server_env.lifecycle(local_transport)
    record = await life.restart("p", server_env.profile(), server_env.record_event)
    assert record.log_path is not None
    log = Path(record.log_path)

    def requests() -> int:
        text = log.read_text()
        return text.count("GET /ready") + text.count("GET /server_info")

    await asyncio.sleep(0.3)
    before = requests()
    commands: list[list[str]] = []
    original = local_transport.run

    async def counted(argv: Sequence[str], **options: Any) -> Any:
        commands.append(list(argv))
        return await original(argv, **options)

    local_transport.run = counted  # type: ignore[method-assign]
    quiet = await life.status(check_health=False, known_version="0.5.23")
    local_transport.run = original  # type: ignore[method-assign]
    assert quiet.running and quiet.health == "unchecked" and quiet.version == "0.5.23"
    # one host command: the record read probes its process too (64 hosts poll every 2 s)
    assert [argv[2] for argv in commands] == ["read"]
    await asyncio.sleep(0.3)
    assert requests() == before
    full = await life.status(known_version="0.5.23")
    assert full.health == "ready"
    await asyncio.sleep(0.3)
    text = log.read_text()
    assert requests() == before + 1 and text.count("GET /server_info") >= 1  # /ready only
    await life.stop()


async def test_profile_log_dir_holds_the_launch_logs(
        server_env: ServerEnv, local_transport: LocalTransport) -> None:
    """`profiles.*.log_dir` (config.example.toml): per-launch logs go there, `~` being the
    host's home; current.log in the run dir still points at the newest."""
    life = server_env.lifecycle(local_transport)
    chosen = f"~/logs-{server_env.port}"
    profile = server_env.profile().model_copy(update={"log_dir": chosen})
    record = await life.start("a", profile)
    try:
        expected = Path(os.path.expanduser(chosen))
        assert record.log_path is not None and Path(record.log_path).parent == expected
        assert "fired up" in Path(record.log_path).read_text()
        assert os.path.realpath(server_env.root / "run" / "current.log") == record.log_path
        assert expected.stat().st_mode & 0o777 == 0o700
    finally:
        await life.stop()
