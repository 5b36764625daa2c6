"""The event feed every session has: fold an event into the host's state, then queue it, with
the aspects of the state it changed, for the one consumer (the app's pump) to drain."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import NamedTuple

from console.session.events import SessionEvent
from console.session.state import Aspect, HostState


class Change(NamedTuple):
    """One event and what `HostState.apply` said it changed (what a renderer redraws)."""

    event: SessionEvent
    aspects: tuple[Aspect, ...]


class EventFeed:
    """Mixin for HostSession and ReplaySession; they set `state` and `_queue`."""

    state: HostState
    _queue: asyncio.Queue[Change | None]
    observer: Callable[[SessionEvent], None] | None = None
    """Sees every event as it is emitted (a Recorder writing `--record FILE`)."""

    def emit(self, event: SessionEvent) -> None:
        aspects = self.state.apply(event)
        if self.observer is not None:
            self.observer(event)
        self._queue.put_nowait(Change(event, aspects))

    async def changes(self) -> AsyncIterator[Change]:
        """Each event in order, already folded into `state`, with the aspects it changed."""
        while True:
            change = await self._queue.get()
            if change is None:
                return
            yield change

    async def events(self) -> AsyncIterator[SessionEvent]:
        """The events alone (a consumer that does not render)."""
        async for change in self.changes():
            yield change.event

    def end_events(self) -> None:
        """Ends `changes()` once everything queued before has been drained."""
        self._queue.put_nowait(None)
