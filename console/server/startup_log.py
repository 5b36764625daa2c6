"""Where a launch's startup lines come from (the steps and the ready line the lifecycle reads
while the server starts).

The lifecycle asks for a launch's log before the server starts (`StartupLog.follow`, right
after the host made the new log file and pointed `current.log` at it), so no line of the new
file is missed, and iterates the feed while it waits for the server. The CLI has no follower
of its own running, so it starts one (`OwnFollower`, on the launch's file from its first byte);
the console's session hands its own follower's lines instead (console/session/startup_tap.py),
so a restart does not start a second follower on the file the session already follows.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from console.host.transport import Transport
from console.logs.follower import FollowBatch, LogFollower

ALL_LINES = 1 << 40  # a startup follower reads the new log from its first byte


class StartupFeed(Protocol):
    """One launch's log: batches of its lines (with the follower's notices) until closed."""

    def __aiter__(self) -> AsyncIterator[FollowBatch]: ...

    async def close(self) -> None: ...


class StartupLog(Protocol):
    def follow(self, log_path: str) -> StartupFeed:
        """The lines of the launch's log at `log_path` from its first, collected from now
        (called before the server starts)."""
        ...


class OwnFollower:
    """A follower of its own on each launch's file (the CLI's): after an SSH drop it resumes
    at the exact byte offset, and it polls more often than the console's (startup steps are
    shown as they happen)."""

    def __init__(self, transport: Transport, python: str) -> None:
        self.transport = transport
        self.python = python

    def follow(self, log_path: str) -> StartupFeed:
        return LogFollower(self.transport, log_path, start_lines=ALL_LINES, python=self.python,
                           batch_interval=0.05)


__all__ = ["ALL_LINES", "OwnFollower", "StartupFeed", "StartupLog"]
