"""The SSH port forward's protocol relay (console/host/relay.py) and the load forward's relay
processes (console/host/forward_proc.py), over the real sshd on loopback."""

from __future__ import annotations

import asyncio
import hashlib
import os
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from console import aio
from console.host.ciphers import PREFERRED, encryption_preference
from console.host.ssh import SshTransport
from tests.support.host_fixtures import make_ssh_transport
from tests.support.sshd import Sshd

pytestmark = pytest.mark.sshd
BIG = 8 * 1024 * 1024


async def _serve(
    handler: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
) -> AsyncIterator[int]:
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    try:
        yield int(server.sockets[0].getsockname()[1])
    finally:
        server.close()


@pytest.fixture
async def echo_until_eof() -> AsyncIterator[int]:
    """Reads everything until EOF, then answers with its length and digest (needs half-close)."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        data = await reader.read()
        writer.write(f"{len(data)} {hashlib.sha256(data).hexdigest()}".encode())
        await writer.drain()
        writer.close()

    async for port in _serve(handler):
        yield port


@pytest.fixture
async def firehose() -> AsyncIterator[int]:
    """Sends BIG numbered bytes as fast as the reader takes them."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        block = bytes(range(256)) * 256
        for _ in range(BIG // len(block)):
            writer.write(block)
            await writer.drain()
        writer.close()

    async for port in _serve(handler):
        yield port


async def test_half_close_reaches_the_host_and_the_answer_comes_back(
    ssh_transport: SshTransport, echo_until_eof: int
) -> None:
    forward = await ssh_transport.forward_port(echo_until_eof)
    payload = os.urandom(300_000)
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", forward.local_port)
        writer.write(payload)
        writer.write_eof()  # the host only answers once it has seen EOF
        answer = await aio.wait_for(reader.read(), 60)
        writer.close()
    finally:
        await forward.close()
    assert answer.decode() == f"{len(payload)} {hashlib.sha256(payload).hexdigest()}"


async def test_a_slow_reader_gets_every_byte_in_order(
    ssh_transport: SshTransport, firehose: int
) -> None:
    forward = await ssh_transport.forward_port(firehose)
    try:
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", forward.local_port, limit=4096)
        got = bytearray()
        while chunk := await aio.wait_for(reader.read(4096), 60):
            if not got:
                await asyncio.sleep(0.5)  # a stalled reader: the relay must hold back, not drop
            got += chunk
        writer.close()
    finally:
        await forward.close()
    assert len(got) == BIG
    assert bytes(got) == (bytes(range(256)) * 256) * (BIG // 65536)


async def test_load_forward_relays_share_one_port_and_outlive_one_of_them(
    ssh_transport: SshTransport, echo_until_eof: int
) -> None:
    forward = await ssh_transport.load_forward_port(echo_until_eof, relays=2)
    try:
        pids = forward.pids  # type: ignore[attr-defined]
        assert len(set(pids)) == 2 and os.getpid() not in pids
        assert await _round_trip(forward.local_port, b"x" * 1000) == b"1000 " + \
            hashlib.sha256(b"x" * 1000).hexdigest().encode()
        os.kill(pids[0], signal.SIGKILL)  # one relay gone: the other still listens there
        await aio.wait_for(forward._processes[0].wait(), 30)  # type: ignore[attr-defined]
        for size in range(1, 9):
            data = os.urandom(size * 1000)
            answer = await _round_trip(forward.local_port, data)
            assert answer == f"{len(data)} {hashlib.sha256(data).hexdigest()}".encode()
    finally:
        await forward.close()


async def _round_trip(port: int, data: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    writer.write_eof()
    try:
        return await aio.wait_for(reader.read(), 60)
    finally:
        writer.close()


async def test_the_connection_asks_for_aes_gcm_unless_ssh_config_names_ciphers(
    sshd: Sshd, tmp_path: Path
) -> None:
    transport = make_ssh_transport(sshd)
    await transport.connect()
    try:
        connection = await transport.connection()
        assert connection.get_extra_info("send_cipher") == "aes128-gcm@openssh.com"
    finally:
        await transport.close()
    config = tmp_path / "config"
    config.write_text("Host *\n  Ciphers chacha20-poly1305@openssh.com\n")
    assert encryption_preference(True, config) is None  # the user's choice stands
    assert encryption_preference(False, config) == PREFERRED  # config not read at all
    config.write_text("Host x\n  HostName example.invalid\n")
    assert encryption_preference(True, config) == PREFERRED
