"""Transports against real parts: local subprocesses and a real OpenSSH sshd on loopback."""

from __future__ import annotations

import asyncio
import random
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from aiohttp import web

from console import aio
from console.errors import HostKeyError, TransportError
from console.host.local import LocalTransport
from console.host.ssh import SshTransport
from tests.support.host_fixtures import make_ssh_transport
from tests.support.sshd import Sshd, start_sshd


def _pids_matching(pattern: str) -> list[int]:
    result = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True)
    return [int(p) for p in result.stdout.split()]


async def _wait_until(predicate: Callable[[], object], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.05)
    return bool(predicate())


def _unique_sleep() -> str:
    return f"{random.randint(100000, 999999)}.{random.randint(10, 99)}"


async def test_run_returns_status_and_both_streams(any_transport: LocalTransport) -> None:
    result = await any_transport.run(["sh", "-c", 'echo out; echo err >&2; exit 3'])
    assert (result.exit_status, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert not result.ok


async def test_run_passes_input_and_env(any_transport: LocalTransport) -> None:
    result = await any_transport.run(
        ["sh", "-c", 'cat; printf "%s" "$PLATEAU_X"'], input="hello\n", env={"PLATEAU_X": "a b"}
    )
    assert result.stdout == "hello\na b"


async def test_run_timeout_is_an_error(any_transport: LocalTransport) -> None:
    with pytest.raises(TransportError, match="timed out"):
        await any_transport.run(["sleep", "5"], timeout=0.3)


async def test_missing_program_gives_status_127_or_error(any_transport: LocalTransport) -> None:
    try:
        result = await any_transport.run(["plateau-no-such-program"])
    except TransportError as exc:
        assert "plateau-no-such-program" in str(exc)
    else:
        assert result.exit_status == 127


async def test_stream_close_kills_remote_process(any_transport: LocalTransport) -> None:
    marker = _unique_sleep()
    stream = await any_transport.stream_lines(
        ["sh", "-c", f'for i in 1 2 3; do echo "line $i"; done; exec sleep {marker}']
    )
    lines = []
    async for line in stream:
        lines.append(line)
        if len(lines) == 3:
            break
    assert lines == ["line 1", "line 2", "line 3"]
    assert await _wait_until(lambda: bool(_pids_matching(f"sleep {marker}")))
    await stream.close()
    assert await _wait_until(lambda: not _pids_matching(f"sleep {marker}")), "process survived"


async def test_stream_ends_with_command_and_reports_status(any_transport: LocalTransport) -> None:
    stream = await any_transport.stream_lines(["sh", "-c", "echo a; echo b; exit 4"])
    lines = [line async for line in stream]
    await stream.close()
    assert lines == ["a", "b"]
    assert stream.exit_status == 4


async def test_detached_survives_disconnect_and_group_kill(sshd: Sshd, tmp_path: Path) -> None:
    marker = _unique_sleep()
    log = tmp_path / "logs" / "detached.log"
    transport = make_ssh_transport(sshd)
    process = await transport.start_detached(
        ["sh", "-c", f"echo started; sleep {marker} & wait"], log_path=str(log)
    )
    assert process.pid == process.pgid > 1
    await transport.close()  # the SSH connection goes away; the process must not
    again = make_ssh_transport(sshd)
    try:
        assert await again.is_alive(process.pid)
        assert await _wait_until(lambda: log.exists() and "started" in log.read_text())
        assert _pids_matching(f"sleep {marker}")
        assert await again.signal_group(process.pgid, "TERM")
        assert await _wait_until(lambda: not _pids_matching(f"sleep {marker}"))
        assert not await again.is_alive(process.pid)
        # It may linger as a zombie where PID 1 does not reap, so probe an unused group.
        assert not await again.signal_group(4_194_000, "TERM")
    finally:
        await again.close()


async def test_detached_appends_never_truncates(
    any_transport: LocalTransport, tmp_path: Path
) -> None:
    log = tmp_path / "server.log"
    log.write_text("earlier launch\n")
    process = await any_transport.start_detached(["echo", "second"], log_path=str(log))
    assert await _wait_until(lambda: "second" in log.read_text())
    assert log.read_text().startswith("earlier launch\n")
    assert process.log_path == str(log)


async def test_signal_rejects_bad_input(any_transport: LocalTransport) -> None:
    with pytest.raises(ValueError):
        await any_transport.signal_group(1, "TERM")
    with pytest.raises(ValueError):
        await any_transport.signal_group(1234, "TERM; reboot")


async def test_file_round_trip_binary(any_transport: LocalTransport, tmp_path: Path) -> None:
    path = tmp_path / "sub dir" / "f'ile $(x).bin"
    data = bytes(range(256)) * 64
    await any_transport.write_file(str(path), data, mode=0o600)
    assert path.read_bytes() == data
    assert path.stat().st_mode & 0o777 == 0o600
    assert await any_transport.read_file(str(path)) == data
    with pytest.raises(TransportError, match="cannot read"):
        await any_transport.read_file(str(tmp_path / "missing"))


async def test_port_forward_reaches_remote_loopback(any_transport: LocalTransport) -> None:
    async def hello(request: web.Request) -> web.Response:
        return web.Response(text="forwarded " + request.path)

    app = web.Application()
    app.router.add_get("/{tail:.*}", hello)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    forward = await any_transport.forward_port(port)
    try:
        async with httpx.AsyncClient() as client:
            responses = await asyncio.gather(
                *(client.get(f"http://127.0.0.1:{forward.local_port}/x{i}") for i in range(20))
            )
        assert [r.text for r in responses] == [f"forwarded /x{i}" for i in range(20)]
    finally:
        await forward.close()
        await runner.cleanup()


@pytest.mark.sshd
async def test_many_concurrent_commands_stay_under_max_sessions(sshd: Sshd) -> None:
    transport = make_ssh_transport(sshd)
    try:
        results = await asyncio.gather(
            *(transport.run(["sh", "-c", f"sleep 0.2; echo {i}"]) for i in range(25))
        )
        assert [r.stdout.strip() for r in results] == [str(i) for i in range(25)]
    finally:
        await transport.close()


@pytest.mark.sshd
async def test_reconnects_after_sshd_child_killed(sshd: Sshd) -> None:
    events: list[str] = []
    transport = make_ssh_transport(sshd)
    transport.subscribe(lambda event: events.append(event.kind))
    try:
        assert (await transport.run(["echo", "before"])).stdout == "before\n"
        assert sshd.drop_connections() >= 1
        assert await _wait_until(lambda: "lost" in events)
        result = await transport.run(["echo", "after"])
        assert result.stdout == "after\n"
        assert "reconnected" in events
    finally:
        await transport.close()


@pytest.mark.sshd
async def test_unknown_host_key_refused_with_fingerprint(sshd: Sshd, tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    transport = make_ssh_transport(sshd, known_hosts=empty)
    with pytest.raises(HostKeyError, match=r"unknown host key .*SHA256:") as info:
        await transport.connect()
    assert "accept" in str(info.value)
    assert not empty.exists()  # nothing learned under the strict policy


@pytest.mark.sshd
async def test_accept_new_learns_key_then_strict_works(sshd: Sshd, tmp_path: Path) -> None:
    learned = tmp_path / "known_hosts"
    first = make_ssh_transport(sshd, known_hosts=learned, policy="accept-new")
    assert (await first.run(["echo", "ok"])).ok
    await first.close()
    assert f"[127.0.0.1]:{sshd.port} ssh-ed25519 " in learned.read_text()
    second = make_ssh_transport(sshd, known_hosts=learned, policy="strict")
    assert (await second.run(["echo", "ok"])).ok
    await second.close()


@pytest.mark.sshd
async def test_explicit_fingerprint_acceptance(sshd: Sshd, tmp_path: Path) -> None:
    learned = tmp_path / "known_hosts"
    with pytest.raises(HostKeyError) as info:
        await make_ssh_transport(sshd, known_hosts=learned).connect()
    fingerprint = next(w for w in str(info.value).split() if w.startswith("SHA256:"))
    fingerprint = fingerprint.rstrip(".,")
    transport = make_ssh_transport(sshd, known_hosts=learned, accept_fingerprint=fingerprint)
    assert (await transport.run(["true"])).ok
    await transport.close()


@pytest.mark.sshd
async def test_changed_host_key_always_refused(sshd: Sshd, tmp_path: Path) -> None:
    other = start_sshd(tmp_path / "other")  # a different host key
    try:
        wrong = tmp_path / "known_hosts"
        public = Path(f"{other.host_key}.pub").read_text().split()
        wrong.write_text(f"[127.0.0.1]:{sshd.port} {public[0]} {public[1]}\n")
        transport = make_ssh_transport(sshd, known_hosts=wrong, policy="accept-new")
        with pytest.raises(HostKeyError, match="HOST KEY CHANGED"):
            await transport.connect()
        assert len(wrong.read_text().splitlines()) == 1  # not "learned"
    finally:
        other.stop()


@pytest.mark.sshd
async def test_unreachable_host_is_one_clear_error(tmp_path: Path) -> None:
    transport = SshTransport(
        "nowhere", "127.0.0.1", port=1, known_hosts=tmp_path / "kh", use_ssh_config=False,
        connect_timeout=2,
    )
    with pytest.raises(TransportError, match=r"cannot connect to 127\.0\.0\.1:1"):
        await transport.connect()


@pytest.mark.sshd
async def test_signalled_command_reports_128_plus_the_signal(ssh_transport: SshTransport) -> None:
    result = await ssh_transport.run(["sh", "-c", "kill -KILL $$"])
    assert result.exit_status == 128 + 9  # was -1: the exit-signal's number was lost


@pytest.mark.sshd
async def test_command_cut_by_a_dropped_connection_is_a_transport_error(
    sshd: Sshd, tmp_path: Path
) -> None:
    transport = make_ssh_transport(sshd)
    started = tmp_path / "started"
    try:
        await transport.connect()
        running = asyncio.ensure_future(
            transport.run(["sh", "-c", f"touch '{started}'; sleep 60"]))
        assert await _wait_until(started.exists, timeout=60)
        assert sshd.drop_connections() >= 1
        # was: an ordinary result with exit status -1, as if the command had failed
        with pytest.raises(TransportError, match="connection lost while running sh -c"):
            await aio.wait_for(running, 60)
    finally:
        await transport.close()
