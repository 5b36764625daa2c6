"""Asyncio helpers that are correct on Python 3.11.

`asyncio.wait_for` on 3.11 swallows a cancellation that arrives while its inner awaitable is
completing (cpython gh-86296, fixed in 3.12 by building it on `asyncio.timeout`): the caller
gets the result and keeps running although it was cancelled. A follower loop waiting on an
event that is set as often as lines arrive hit exactly that, and `cancel(); await task` then
hung forever (the startup follower of a restart, a `server start` that once hung).
`asyncio.timeout` counts cancellations (`uncancel`) and always lets the outer one through.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def wait_for(awaitable: Awaitable[T], timeout: float | None) -> T:
    """`asyncio.wait_for` that never loses an outer cancellation."""
    async with asyncio.timeout(timeout):
        return await awaitable


async def wait_event(event: asyncio.Event, timeout: float | None) -> bool:
    """True when `event` was set within `timeout`, False on timeout; cancellable."""
    try:
        async with asyncio.timeout(timeout):
            await event.wait()
    except TimeoutError:
        return False
    return True
