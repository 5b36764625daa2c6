"""The simulator's /flush_cache behaves as SGLang 0.5.23's (flush_wrapper.py): timeout 0 fails
at once while requests are in flight, a timeout defers the flush until idle or the deadline,
and a second flush while one waits is refused."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx

from tests.support.bench_fixtures import IDEAL_ITL_MS
from tests.support.sim_fixtures import SimProcess

LONG_TOKENS = 400  # 400 x 5 ms of simulated decode: in flight for 2 s or more


async def _open_stream(client: httpx.AsyncClient, base: str) -> AsyncIterator[bytes]:
    """The body of a long streamed request, its first chunk already read (so it is in
    flight). Keep the iterator: dropping it closes the stream and the server aborts."""
    body = {"text": "hello", "stream": True,
            "sampling_params": {"max_new_tokens": LONG_TOKENS, "ignore_eos": True}}
    request = client.build_request("POST", f"{base}/generate", json=body)
    response = await client.send(request, stream=True)
    chunks = response.aiter_raw()
    first = await chunks.__anext__()
    assert first.startswith(b"data: ")

    async def rest() -> AsyncIterator[bytes]:
        yield first
        async for chunk in chunks:
            yield chunk

    return rest()


async def test_flush_waits_for_idle_and_refuses_a_second_one(ideal_sim: SimProcess) -> None:
    base = ideal_sim.base_url
    async with httpx.AsyncClient(timeout=120) as client:
        stream = await _open_stream(client, base)
        now = await client.post(f"{base}/flush_cache")
        assert (now.status_code, now.text) == (400, "Flush cache failed.\n")
        short = await client.post(f"{base}/flush_cache", params={"timeout": 0.01})
        assert (short.status_code, short.text) == (400, "Timed out waiting for idle state.")
        waiting = asyncio.ensure_future(client.post(f"{base}/flush_cache", params={"timeout": 60}))
        second = await client.post(f"{base}/flush_cache")
        while second.text == "Flush cache failed.\n":  # the waiting one has not arrived yet
            assert not waiting.done()
            second = await client.post(f"{base}/flush_cache")
        assert (second.status_code, second.text) == (
            400, "Another flush_cache is already in progress.")
        body = b"".join([chunk async for chunk in stream])
        assert body.endswith(b"data: [DONE]\n\n")  # the stream was not cut by any flush
        deferred = await waiting
        assert deferred.status_code == 200 and deferred.text.startswith("Cache flushed.")
        bad = await client.post(f"{base}/flush_cache", params={"timeout": "nan"})
        assert bad.status_code == 422  # FastAPI's Query(ge=0.0)
    log = ideal_sim.log_text()
    assert "Cache not flushed because there are pending requests. #queue-req: 0, " \
        "#running-req: 1" in log
    assert "Deferred flush_cache timed out while waiting for idle state." in log
    assert "Cache flushed successfully!" in log
    assert IDEAL_ITL_MS * LONG_TOKENS >= 2000
