"""A demo server that dies with its owner.

`plateau demo` and `plateau sweep --demo` start a simulated server (detached, so restarts
work like on a real host) in a temp run dir. If the owner is SIGKILLed or its terminal closes,
its own cleanup never runs; PR_SET_PDEATHSIG would not reach the server (a grandchild in its
own session). So a small host-side guard is started first: it holds a pipe from the owner
(its stdout) and, when the owner goes (pipe closed, or a signal), stops the server that the
run dir's launch record proves Plateau started and removes the run dir.

The guard must be guarding before the server is launched, not before anything else: `plateau
demo` spawns it first thing and waits for it (`OwnerGuard.ready`) only where its session
launches the server, so the guard's start-up overlaps the console's.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator

from console import aio
from console.config_models import HostConfig
from console.errors import PlateauError
from console.host.transport import LineStream, Transport
from console.server.hostscript import stream_host_script

START_WAIT_S = 10.0
"""How long `close` waits for a guard still starting (a Python start, normally ~0.05 s)."""


class OwnerGuard:
    """A guard being started: `ready()` once it guards, `close()` to have it clean up now.

    Made inside a running loop; its process is spawned at the loop's next turn (`spawn()`
    yields once so that it is), and nothing here waits for it until `ready()`."""

    def __init__(
        self, transport: Transport, host: HostConfig, *, stop_server: bool, remove_run_dir: bool
    ) -> None:
        self._host_name = host.name
        self._stream: LineStream | None = None
        args = {"run_dir": host.run_dir, "stop_server": stop_server, "remove": remove_run_dir}
        self._started = asyncio.ensure_future(self._start(transport, host.python, args))

    @classmethod
    async def spawn(
        cls, transport: Transport, host: HostConfig, *, stop_server: bool, remove_run_dir: bool
    ) -> OwnerGuard:
        """Start the guard of `host.run_dir`: its first step (installing the host script) is
        under way when this returns; the rest goes on whenever the loop turns."""
        guard = cls(transport, host, stop_server=stop_server, remove_run_dir=remove_run_dir)
        await asyncio.sleep(0)
        return guard

    async def _start(self, transport: Transport, python: str, args: dict[str, object]) -> None:
        self._stream = await stream_host_script(transport, python, "guard", args)
        async for line in self._stream:
            if '"guarding"' in line and json.loads(line).get("state") == "guarding":
                return
        raise PlateauError(f"{self._host_name}: the cleanup guard did not start "
                           f"(exit {self._stream.exit_status})")

    async def ready(self) -> None:
        """Return once the guard holds our pipe; raise if it never will. Nothing the guard is
        to clean up after may start before this returned."""
        await asyncio.shield(self._started)

    async def close(self) -> None:
        """The guard cleans up now, as it would after our death. A guard still starting is
        waited for first (bounded): stopped before its signal handlers exist, it would die
        without cleaning up (the console can quit before the guard is up)."""
        try:
            with contextlib.suppress(Exception):  # a guard that never started: no news now
                await aio.wait_for(asyncio.shield(self._started), START_WAIT_S)
        finally:
            if not self._started.done():
                self._started.cancel()
            if self._stream is not None:
                await self._stream.close()


@contextlib.asynccontextmanager
async def owner_guard(
    transport: Transport, host: HostConfig, *, stop_server: bool, remove_run_dir: bool
) -> AsyncIterator[None]:
    """Guard `host.run_dir` for the duration; on exit (or the owner's death) clean up."""
    guard = await OwnerGuard.spawn(transport, host, stop_server=stop_server,
                                   remove_run_dir=remove_run_dir)
    try:
        await guard.ready()
        yield
    finally:
        await guard.close()
