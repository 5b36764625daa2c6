"""The load worker's HTTP/1.1 client (console/bench/h1.py): chunked bodies however the bytes
are split, error statuses, keep-alive reuse, a stale keep-alive connection retried."""

from __future__ import annotations

import asyncio
import time

import httpx

from console.bench.h1 import Feed, H1Client, _Exchange
from console.bench.worker import Job, new_session, run_job
from console.bench.workload import Workload
from tests.support.sim_fixtures import SimProcess

BODY = b'data: {"a":1}\n\ndata: [DONE]\n\n'
CHUNKED = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
           b"Transfer-Encoding: chunked\r\n\r\n"
           b"e\r\n" + BODY[:14] + b"\r\n" + f"{len(BODY) - 14:x}".encode() + b"\r\n"
           + BODY[14:] + b"\r\n0\r\n\r\n")


def _read(parts: list[bytes]) -> tuple[_Exchange, bytes]:
    got: list[bytes] = []
    loop = asyncio.new_event_loop()
    try:
        exchange = _Exchange(lambda _t, data: got.append(data), loop.create_future())
        for part in parts:
            exchange.receive(0, part)
        assert exchange.done.done() and exchange.done.exception() is None
    finally:
        loop.close()
    return exchange, b"".join(got)


def test_chunked_body_is_whole_at_every_split() -> None:
    for first in range(1, len(CHUNKED)):
        for second in range(first, len(CHUNKED), 7):
            parts = [CHUNKED[:first], CHUNKED[first:second], CHUNKED[second:]]
            exchange, body = _read([p for p in parts if p])
            assert body == BODY, (first, second)
            assert exchange.status == 200 and exchange.keep_alive


def test_error_status_keeps_the_start_of_its_body() -> None:
    text = b'{"error": "' + b"x" * 500 + b'"}'
    response = (b"HTTP/1.1 400 Bad Request\r\nContent-Length: " + str(len(text)).encode()
                + b"\r\n\r\n" + text)
    exchange, body = _read([response[:30], response[30:]])
    assert exchange.status == 400 and body == b""
    assert exchange.error_body == text[:300]


def _into(chunks: list[bytes]) -> Feed:
    return lambda _t, data: chunks.append(data)


async def _one_shot_server() -> tuple[asyncio.Server, int]:
    """Answers one request per connection, then closes it without saying so (a keep-alive
    connection the server dropped while it sat idle)."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(CHUNKED)
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


async def test_a_dropped_keep_alive_connection_is_retried_once() -> None:
    server, port = await _one_shot_server()
    client = H1Client(f"http://127.0.0.1:{port}")
    try:
        for _ in range(3):
            got: list[bytes] = []
            status, _ = await client.post(client.request_bytes("/x", b"{}", ()),
                                          _into(got))
            assert status == 200 and b"".join(got) == BODY
            await asyncio.sleep(0.2)  # the server has closed it by now
    finally:
        client.close()
        server.close()
        await server.wait_closed()


async def test_worker_streams_through_h1_and_reuses_connections(ideal_sim: SimProcess) -> None:
    workload = Workload(endpoint="generate", input_len=8, output_len=5)
    clients: dict[str, H1Client] = {}
    session = new_session(30)
    try:
        for seed in (1, 2):
            job = Job(base_url=ideal_sim.base_url, workload=workload, streams=2, prompts=4,
                      start_at_ns=time.perf_counter_ns(), deadline_ns=None, timeout_s=30,
                      seed=seed)
            httpx.get(f"{ideal_sim.base_url}/_sim/lateness", params={"reset": "1"})
            records = await run_job(job, session, clients=clients)
            assert len(records) == 4
            assert all(r.error is None and r.output_tokens == 5 for r in records), records
            # One stamped chunk per event the sim wrote (it counts its writes; on a loaded
            # machine it may put two due tokens in one event, so not "one per token").
            written = httpx.get(f"{ideal_sim.base_url}/_sim/lateness").json()["chunk"]["count"]
            assert sum(len(r.chunks) for r in records) == written
            for record in records:
                stamps = [t for t, _ in record.chunks]
                assert stamps == sorted(stamps) and all(n >= 1 for _, n in record.chunks)
    finally:
        await session.close()
    (client,) = clients.values()
    assert len(client.idle) == 2  # two streams, two connections, kept across both jobs
    client.close()
