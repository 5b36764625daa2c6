"""A launch's startup lines from the session's own log follower (console.server.startup_log's
StartupLog), so a restart, an A/B's or a tune's launches read the host through the one follower
the session runs, not a second one on the same file.

The session follows `current.log`, which the host points at each launch's new file before the
server starts; its follower switches to that file and reads it from its first byte. A feed
opened for a launch's `log_path` passes on the batches read from that file (the follower's
position names it) and nothing of the file before; the follower's notices (a lost connection)
are the session's own to say, so they are left out.
"""

from __future__ import annotations

import asyncio
import posixpath
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from console.logs.follower import FollowBatch

MAX_QUEUED = 2000  # batches; a feed nobody reads drops its oldest rather than grow


class StartupTap:
    """Hands the session follower's batches to the launches' feeds open now."""

    def __init__(self) -> None:
        self._feeds: list[TapFeed] = []

    def follow(self, log_path: str) -> TapFeed:
        feed = TapFeed(log_path, self._feeds.remove)
        self._feeds.append(feed)
        return feed

    def feed(self, batch: FollowBatch) -> None:
        for feed in self._feeds:
            feed.offer(batch)

    @property
    def open_feeds(self) -> int:
        return len(self._feeds)


class TapFeed:
    def __init__(self, log_path: str, detach: Callable[[TapFeed], None]) -> None:
        self.name = posixpath.basename(log_path)  # unique per launch (its stamp)
        self._detach = detach
        self._queue: asyncio.Queue[FollowBatch | None] = asyncio.Queue()
        self._closed = False

    def offer(self, batch: FollowBatch) -> None:
        """Take `batch` if it was read from this launch's file."""
        from console.logs.follower import FollowBatch

        position = batch.position
        if self._closed or not batch.events or position is None:
            return
        if posixpath.basename(position.path) != self.name:
            return
        if self._queue.qsize() >= MAX_QUEUED:
            self._queue.get_nowait()
        self._queue.put_nowait(FollowBatch(batch.events, (), position))

    def __aiter__(self) -> AsyncIterator[FollowBatch]:
        return self._batches()

    async def _batches(self) -> AsyncIterator[FollowBatch]:
        while (batch := await self._queue.get()) is not None:
            yield batch

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._detach(self)
        self._queue.put_nowait(None)
