"""The host-wide busy lease: one thing at a time may change or measure a host's server.

A restart and a sweep must never overlap (a sweep against a restarting server measures
nothing), whichever process runs them: the console, `plateau server …`, `plateau sweep …`,
a colleague's console on another machine. So the lease lives on the host: a small host-side
process holds `flock` on `<run_dir>/lease` for the operation's life and writes the holder's
record there (client host, pid, user, what, since when). The kernel drops the lock when that
process exits, and it exits when its owner goes (the stream is closed, the SSH connection
drops, the owner dies: its stdout's reader disappears). A second holder is refused at once
(`HostBusy`, naming the holder) or, with `wait=True`, queued until the first releases.

Inside one process an asyncio lock answers first (no host round trip for the common case)
and makes the lease re-entrant within one task tree (a context variable), so an A/B run can
hold it and call restart and sweep inside.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import getpass
import json
import os
import socket
import time
import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from console.config_models import HostConfig
from console.errors import PlateauError
from console.host.transport import LineStream, Transport
from console.server.hostscript import stream_host_script
from console.text import sanitize


class HostBusy(PlateauError):
    """The host's lease is held by someone else."""

    def __init__(self, host: str, holder: LeaseHolder, wanted: str, run_dir: str = "") -> None:
        super().__init__(f"{host} is busy: {holder.describe()}; {wanted} refused "
                         f"(the lease covers this account's run dir{_in(run_dir)})")
        self.host = host
        self.holder = holder


def _in(run_dir: str) -> str:
    return f" {run_dir}" if run_dir else ""


@dataclass(frozen=True)
class LeaseHolder:
    purpose: str
    since: float  # time.time() when the lease was taken
    client_host: str = ""
    pid: int = 0
    user: str = ""

    def describe(self) -> str:
        age = max(0.0, time.time() - self.since)
        started = datetime.fromtimestamp(self.since, UTC).strftime("%H:%M:%S UTC")
        who = f"pid {self.pid} on {self.client_host or 'unknown host'}"
        if self.user:
            who = f"{self.user}, {who}"
        return f"{self.purpose} ({who}, since {started}, {age:.0f} s)"

    @classmethod
    def from_record(cls, record: Any) -> LeaseHolder:
        """A holder from the host's lease file (untrusted text: sanitised, bounded)."""
        data = record if isinstance(record, dict) else {}

        def text(key: str) -> str:
            return sanitize(str(data.get(key) or ""))[:120]

        try:
            since = float(data.get("since") or 0.0)
            pid = int(data.get("pid") or 0)
        except (TypeError, ValueError):
            since, pid = 0.0, 0
        return cls(text("purpose") or "unknown operation", since, text("client_host"), pid,
                   text("user"))


def _me(purpose: str) -> LeaseHolder:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = ""
    return LeaseHolder(purpose, time.time(), socket.gethostname(), os.getpid(), user)


_held: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar(
    "plateau_host_leases", default=frozenset()
)


class HostLease:
    def __init__(self, host: str) -> None:
        self.host = host
        self._lock = asyncio.Lock()
        self._holder: LeaseHolder | None = None
        self.lost: str | None = None  # why the host-side lock was lost mid-operation

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
    async def hold(
        self,
        purpose: str,
        *,
        wait: bool = False,
        transport: Transport | None = None,
        host: HostConfig | None = None,
        on_wait: Callable[[LeaseHolder], None] | None = None,
    ) -> AsyncIterator[LeaseHolder]:
        """Hold the lease for `purpose`. With `transport` and `host`, also on the host."""
        if self.held_here():
            assert self._holder is not None
            yield self._holder
            return
        if self._lock.locked() and not wait:
            assert self._holder is not None
            raise HostBusy(self.host, self._holder, purpose)
        await self._lock.acquire()
        holder = self._holder = _me(purpose)
        try:
            async with _host_side(self, holder, wait, transport, host, on_wait):
                token = _held.set(_held.get() | {self.host})
                try:
                    yield holder
                finally:
                    _held.reset(token)
        finally:
            self._holder = None
            self._lock.release()


@dataclass
class _HostLock:
    """The host-side holder of one held lease (replaced when it is taken again)."""

    lease: HostLease
    transport: Transport
    host: HostConfig
    who: dict[str, Any]
    stream: LineStream | None = None

    async def acquire(self, wait: bool, on_wait: Callable[[LeaseHolder], None] | None) -> None:
        self.stream = await _acquire(self.lease.host, self.transport, self.host, self.who,
                                     wait, on_wait)

    async def keep(self) -> None:
        """Watch the held lock; if the host-side holder ends while we still hold the lease
        (an SSH drop kills it), take it again once the transport has reconnected."""
        delay = 0.5
        for _attempt in range(8):
            if self.stream is not None:
                async for _line in self.stream:
                    delay = 0.5
            await asyncio.sleep(delay)
            delay = min(delay * 2, 10.0)
            try:
                await self.acquire(False, None)
            except HostBusy as exc:
                self.lease.lost = (f"lease lost after a disconnect; now held by "
                                   f"{exc.holder.describe()}")
                return
            except (PlateauError, OSError):
                self.stream = None
        self.lease.lost = "lease lost after a disconnect (could not take it again)"

    async def release(self) -> None:
        if self.stream is not None:
            await self.stream.close()


@asynccontextmanager
async def _host_side(
    lease: HostLease,
    holder: LeaseHolder,
    wait: bool,
    transport: Transport | None,
    host: HostConfig | None,
    on_wait: Callable[[LeaseHolder], None] | None,
) -> AsyncIterator[None]:
    if transport is None or host is None:
        yield
        return
    who = {"purpose": holder.purpose, "client_host": holder.client_host, "pid": holder.pid,
           "user": holder.user}
    lease.lost = None
    lock = _HostLock(lease, transport, host, who)
    await lock.acquire(wait, on_wait)
    keeper = asyncio.create_task(lock.keep())
    try:
        yield
    finally:
        keeper.cancel()
        with contextlib.suppress(asyncio.CancelledError, PlateauError, OSError):
            await keeper
        await lock.release()


async def _acquire(
    name: str,
    transport: Transport,
    host: HostConfig,
    who: dict[str, Any],
    wait: bool,
    on_wait: Callable[[LeaseHolder], None] | None,
) -> LineStream:
    stream = await stream_host_script(
        transport, host.python, "lease", {"run_dir": host.run_dir, "wait": wait, "who": who}
    )
    try:
        async for line in stream:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            state = message.get("state") if isinstance(message, dict) else None
            if isinstance(message, dict) and isinstance(message.get("refused"), str):
                raise PlateauError(f"{name}: refused: {sanitize(message['refused'][:400])}")
            if state == "held":
                return stream
            if state == "busy":
                raise HostBusy(name, LeaseHolder.from_record(message.get("holder")),
                               str(who["purpose"]), host.run_dir)
            if state == "waiting" and on_wait is not None:
                on_wait(LeaseHolder.from_record(message.get("holder")))
        raise PlateauError(f"{name}: could not take the host lease in {host.run_dir} "
                           f"(the host helper exited with {stream.exit_status})")
    except BaseException:
        await stream.close()
        raise


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
