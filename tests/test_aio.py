"""console.aio: waits with a timeout that never lose an outer cancellation.

The case that hung `plateau server start` (issue 12): a consumer waits for an event with a
timeout; the event is set and, in the same loop turn, the consumer's task is cancelled.
Python 3.11's `asyncio.wait_for` returns the result and drops the cancellation, so the
consumer loops on and `cancel(); await task` never returns."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from console import aio
from console.host.local import LocalTransport
from console.logs.follower import LogFollower


async def _cancel_as_it_wakes(wait_once: object) -> bool:
    """Run a consumer loop on `wait_once(event)`; set the event and cancel in one turn.
    True when the consumer ended (was cancelled), False when it kept running."""
    event = asyncio.Event()
    turns = 0

    async def consumer() -> None:
        nonlocal turns
        while True:
            await wait_once(event)  # type: ignore[operator]
            event.clear()
            turns += 1

    task = asyncio.create_task(consumer())
    await asyncio.sleep(0)  # the consumer is now waiting
    event.set()
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=2.0)
    if not done:
        task.cancel()  # free the loop for the next test either way
        await asyncio.gather(task, return_exceptions=True)
    return bool(done) and task.cancelled()


async def test_wait_event_is_cancelled_while_its_event_is_set() -> None:
    assert await _cancel_as_it_wakes(lambda event: aio.wait_event(event, 5.0))


async def test_wait_for_is_cancelled_while_its_awaitable_completes() -> None:
    assert await _cancel_as_it_wakes(lambda event: aio.wait_for(event.wait(), 5.0))


async def test_wait_event_reports_timeout_and_set() -> None:
    event = asyncio.Event()
    assert await aio.wait_event(event, 0.01) is False
    event.set()
    assert await aio.wait_event(event, 0.01) is True


async def test_wait_for_raises_timeout_error_and_returns_the_result() -> None:
    with pytest.raises(TimeoutError):
        await aio.wait_for(asyncio.sleep(10), 0.01)
    assert await aio.wait_for(asyncio.sleep(0, result=7), 1.0) == 7


async def test_follower_consumer_cancelled_mid_stream_always_ends(tmp_path: Path) -> None:
    """The lifecycle's startup follower is cancelled while lines pour in (the server's
    ready burst): every cancellation must end the consumer."""
    log = tmp_path / "server.log"
    log.write_text("")
    stop_writing = asyncio.Event()

    async def writer() -> None:
        n = 0
        with log.open("a", encoding="utf-8") as handle:
            while not stop_writing.is_set():
                handle.write(f"[2026-02-19 05:21:47 TP0] line {n}\n")
                handle.flush()
                n += 1
                await asyncio.sleep(0.0005)

    writing = asyncio.create_task(writer())
    transport = LocalTransport("cancel-test")
    try:
        for attempt in range(30):
            follower = LogFollower(transport, str(log), start_lines=0, batch_interval=0.0,
                                   idle_flush=0.001)

            async def consume(follower: LogFollower = follower) -> None:
                try:
                    async for _batch in follower:
                        pass
                finally:
                    await follower.close()

            task = asyncio.create_task(consume())
            await asyncio.sleep(0.05 + 0.003 * attempt)
            task.cancel()
            done, _ = await asyncio.wait({task}, timeout=20.0)
            assert done, f"consumer {attempt} ignored its cancellation"
    finally:
        stop_writing.set()
        await writing
        await transport.close()
