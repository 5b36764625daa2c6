"""The per-host busy lease: one thing at a time may change or measure a host's server.

A restart and a sweep must never overlap (a sweep against a restarting server measures
nothing). Both hold the host's lease: `async with host_lease(name).hold("sweep ..."):`.
A second holder is refused at once (`HostBusy`) or, with `wait=True`, queued until the first
releases. The lease is re-entrant within one asyncio task tree (a context variable), so an
A/B run can hold it and call restart and sweep inside.

The lease lives in this process. Across processes the lifecycle's host-side checks (the pid
in server.json, the port probe) still prevent two servers.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from console.errors import PlateauError


class HostBusy(PlateauError):
    """The host's lease is held by someone else."""

    def __init__(self, host: str, holder: LeaseHolder, wanted: str) -> None:
        age = time.monotonic() - holder.since
        super().__init__(
            f"{host} is busy: {holder.purpose} (for {age:.0f} s); {wanted} refused"
        )
        self.host = host
        self.holder = holder


@dataclass(frozen=True)
class LeaseHolder:
    purpose: str
    since: float


_held: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar(
    "plateau_host_leases", default=frozenset()
)


class HostLease:
    def __init__(self, host: str) -> None:
        self.host = host
        self._lock = asyncio.Lock()
        self._holder: LeaseHolder | None = None

    @property
    def holder(self) -> LeaseHolder | None:
        return self._holder

    @property
    def busy(self) -> bool:
        return self._holder is not None

    def held_here(self) -> bool:
        """True when the current task (tree) already holds this lease."""
        return self.host in _held.get()

    @asynccontextmanager
    async def hold(self, purpose: str, *, wait: bool = False) -> AsyncIterator[LeaseHolder]:
        if self.held_here():
            assert self._holder is not None
            yield self._holder
            return
        if self._lock.locked() and not wait:
            assert self._holder is not None
            raise HostBusy(self.host, self._holder, purpose)
        await self._lock.acquire()
        holder = LeaseHolder(purpose, time.monotonic())
        self._holder = holder
        token = _held.set(_held.get() | {self.host})
        try:
            yield holder
        finally:
            _held.reset(token)
            self._holder = None
            self._lock.release()


# Per event loop: an asyncio.Lock belongs to one loop (tests run one loop per test).
_LEASES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, HostLease]] = (
    weakref.WeakKeyDictionary()
)


def host_lease(host: str) -> HostLease:
    """The process-wide lease of `host` (created on first use); call it inside the loop."""
    table = _LEASES.setdefault(asyncio.get_running_loop(), {})
    lease = table.get(host)
    if lease is None:
        lease = table[host] = HostLease(host)
    return lease
