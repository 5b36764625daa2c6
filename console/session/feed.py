"""The event feed every session has: fold an event into the host's state, then queue it for
the one consumer (the app's pump) to drain."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from console.session.events import SessionEvent
from console.session.state import HostState


class EventFeed:
    """Mixin for HostSession and ReplaySession; they set `state` and `_queue`."""

    state: HostState
    _queue: asyncio.Queue[SessionEvent | None]
    observer: Callable[[SessionEvent], None] | None = None
    """Sees every event as it is emitted (a Recorder writing `--record FILE`)."""

    def emit(self, event: SessionEvent) -> None:
        self.state.apply(event)
        if self.observer is not None:
            self.observer(event)
        self._queue.put_nowait(event)

    async def events(self) -> AsyncIterator[SessionEvent]:
        while True:
            event = await self._queue.get()
            if event is None:
                return
            yield event

    def end_events(self) -> None:
        """Ends `events()` once everything queued before has been drained."""
        self._queue.put_nowait(None)
