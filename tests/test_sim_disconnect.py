"""A client that goes away mid-stream (a cancelled sweep) is logged as SGLang 0.5.23 logs it:
one INFO line from the streaming route, no traceback (issue 17, item 2)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp

from console import aio


async def _cancel_streams(base: str) -> None:
    async with aiohttp.ClientSession() as session:
        started = asyncio.Event()

        async def stream(path: str, body: dict[str, Any]) -> None:
            async with session.post(base + path, json=body) as response:
                async for _chunk in response.content:
                    started.set()

        tasks = [
            asyncio.create_task(stream("/generate", {
                "text": "hi " * 20, "stream": True,
                "sampling_params": {"max_new_tokens": 5000, "ignore_eos": True}})),
            asyncio.create_task(stream("/v1/completions", {
                "model": "test-model", "prompt": "hi " * 20, "stream": True,
                "max_tokens": 5000, "ignore_eos": True})),
        ]
        await aio.wait_for(started.wait(), 60)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def test_cancelled_stream_logs_like_sglang_without_traceback(sim_server: Any) -> None:
    asyncio.run(_cancel_streams(sim_server.base_url))
    deadline = time.monotonic() + 30
    while sim_server.log_text().count("Client disconnected") < 2:
        assert time.monotonic() < deadline, sim_server.log_text()[-2000:]
        time.sleep(0.1)
    log = sim_server.log_text()
    assert "[http_server] Client disconnected: Request is disconnected from the client side " \
           "(type 3)" in log
    assert "Traceback" not in log and "Error handling request" not in log
