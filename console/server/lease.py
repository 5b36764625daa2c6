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
import hashlib
import json
import math
import os
import secrets
import socket
import time
import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from console import aio
from console.config_models import HostConfig
from console.errors import PlateauError, TransportError
from console.host.transport import LineStream, Transport
from console.server.hostscript import python_failed, run_host_script, stream_host_script
from console.server.refusal import held_by
from console.text import sanitize


class LeaseLost(PlateauError):
    """The host lease was lost mid-operation: the holder's connection stayed away longer
    than the grace, or another holder took the lease; the operation was stopped."""

    def __init__(self, host: str, why: str) -> None:
        super().__init__(f"{host}: lost the host lease: {why}; the operation was stopped")
        self.why = why


class HostBusy(PlateauError):
    """The host's lease is held by someone else."""

    def __init__(self, host: str, holder: LeaseHolder, wanted: str, run_dir: str = "") -> None:
        # The words the console's footer and keys use for the same holder (refusal.held_by).
        super().__init__(f"{host} is busy: {held_by(holder.purpose)}: {holder.describe()}; "
                         f"{wanted} refused "
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
    reconnecting_since: float = 0.0  # the holder's connection dropped then (0: it has not)
    grace: float = 0.0  # how long the host keeps the lease for a holder that is away

    def describe(self) -> str:
        age = max(0.0, time.time() - self.since)
        started = datetime.fromtimestamp(self.since, UTC).strftime("%H:%M:%S UTC")
        who = f"pid {self.pid} on {self.client_host or 'unknown host'}"
        if self.user:
            who = f"{self.user}, {who}"
        return f"{self.purpose} ({who}, since {started}, {age:.0f} s){self._reconnecting()}"

    def _reconnecting(self) -> str:
        if not self.reconnecting_since:
            return ""
        away = max(0.0, time.time() - self.reconnecting_since)
        left = max(0.0, self.grace - away)
        return (f"; its connection dropped {away:.0f} s ago and it is reconnecting: the host "
                f"keeps the lease for it {left:.0f} s more (grace {self.grace:g} s)")

    @classmethod
    def from_record(cls, record: Any) -> LeaseHolder:
        """A holder from the host's lease file (untrusted text: sanitised, bounded)."""
        data = record if isinstance(record, dict) else {}

        def text(key: str) -> str:
            return sanitize(str(data.get(key) or ""))[:120]

        return cls(text("purpose") or "unknown operation", _number(data, "since"),
                   text("client_host"), int(_number(data, "pid")), text("user"),
                   _number(data, "reconnecting_since"), _number(data, "grace"))


def _number(data: dict[str, Any], key: str) -> float:
    """A finite, non-negative number from the host's record (0 for anything else)."""
    try:
        value = float(data.get(key) or 0.0)
    except (TypeError, ValueError, OverflowError):
        return 0.0
    return value if math.isfinite(value) and 0.0 <= value < 1e12 else 0.0


def _sha(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


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
        self._owner: asyncio.Task[Any] | None = None  # the task doing the held work

    def lose(self, why: str) -> None:
        """The host-side lease is gone: stop the work holding it (see `hold`)."""
        self.lost = why
        if self._owner is not None and not self._owner.done():
            self._owner.cancel(why)

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
        self.lost, self._owner = None, asyncio.current_task()
        try:
            async with _host_side(self, holder, wait, transport, host, on_wait):
                token = _held.set(_held.get() | {self.host})
                try:
                    yield holder
                except asyncio.CancelledError:
                    # cancelled by `lose`: the work stops, and says why (unless someone else
                    # cancelled it too, e.g. Ctrl-C: then it stays a cancellation)
                    if self.lost is None or self._owner is None or self._owner.uncancel():
                        raise
                    raise LeaseLost(self.host, self.lost) from None
                finally:
                    _held.reset(token)
        finally:
            self._holder = None
            self._owner = None
            self._lock.release()


@dataclass
class _HostLock:
    """The host-side holder of one held lease: a keeper process that outlives this client's
    connection for the host's `lease_grace_s`, and the stream of the helper attending it
    over the current connection (replaced after a reconnect)."""

    lease: HostLease
    transport: Transport
    host: HostConfig
    who: dict[str, Any]
    token: str = field(default_factory=lambda: secrets.token_hex(16))
    stream: LineStream | None = None

    async def acquire(self, wait: bool, on_wait: Callable[[LeaseHolder], None] | None) -> None:
        try:
            self.stream = await self._ask(wait=wait, on_wait=on_wait)
        except _Broken:
            # the connection dropped while the host was answering: the keeper may hold the
            # lease for us already, or nobody does
            try:
                self.stream = await self.reclaim()
            except LeaseLost:
                self.stream = await self._ask(wait=wait, on_wait=on_wait)

    async def _ask(self, *, wait: bool = False, reclaim: bool = False,
                   on_wait: Callable[[LeaseHolder], None] | None = None) -> LineStream:
        await self._hand_over_token()
        args = {"run_dir": self.host.run_dir, "wait": wait, "who": self.who,
                "token_sha": _sha(self.token), "grace": self.host.lease_grace_s,
                "reclaim": reclaim}
        return await _acquire(self.lease.host, self.transport, self.host, args, on_wait)

    async def _hand_over_token(self) -> None:
        """The token goes on stdin into a file only this account can read, where the lease
        stream (whose stdin is the transport's watchdog) finds it by its hash: never in a
        helper's argv, which every user of the host reads in `ps`."""
        try:
            said = await run_host_script(self.transport, self.host.python, "lease_token",
                                         {"run_dir": self.host.run_dir}, stdin=self.token)
        except TransportError as exc:
            raise _Broken(str(exc)) from None
        if not said.get("stashed"):
            raise PlateauError(f"{self.lease.host}: the host did not take the lease's token")

    async def keep(self) -> None:
        """Watch the attending helper; when it ends (an SSH drop ends it), take the lease
        back from the keeper over the reconnected transport, or say it is lost."""
        while True:
            if self.stream is not None:
                with contextlib.suppress(PlateauError, OSError):
                    async for _line in self.stream:
                        pass
                with contextlib.suppress(PlateauError, OSError):
                    await self.stream.close()
                self.stream = None
            try:
                self.stream = await self.reclaim()
            except LeaseLost as exc:
                self.lease.lose(exc.why)
                return

    async def reclaim(self) -> LineStream:
        """The lease back from our keeper (retried while the transport reconnects), or
        LeaseLost once the keeper says so or the grace has certainly passed."""
        grace = self.host.lease_grace_s
        deadline = time.monotonic() + grace + _RECLAIM_MARGIN_S
        delay = 0.2
        last = "no answer"
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise LeaseLost(self.lease.host, f"the host could not be reached within the "
                                f"lease's grace of {grace:g} s ({sanitize(last[:200])})")
            try:
                return await aio.wait_for(self._ask(reclaim=True), left)
            except (TimeoutError, _Broken) as exc:
                last = str(exc) or "timed out"
            except LeaseLost:
                raise
            except (PlateauError, OSError) as exc:
                last = str(exc)
            await asyncio.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, 2.0)

    async def release(self) -> None:
        """Tell the keeper we are done (it ends, and the kernel drops the lock), then end
        the attending helper. Unreachable host: the keeper ends when the grace expires."""
        with contextlib.suppress(PlateauError, OSError, TimeoutError):
            await aio.wait_for(run_host_script(
                self.transport, self.host.python, "lease_release",
                {"run_dir": self.host.run_dir}, stdin=self.token), _RELEASE_TIMEOUT_S)
        if self.stream is not None:
            with contextlib.suppress(PlateauError, OSError):
                await self.stream.close()


_RECLAIM_MARGIN_S = 10.0
"""How long past the grace a reconnecting holder keeps asking before it gives up by itself
(the keeper decides; this only bounds a holder that cannot reach the host at all)."""
_RELEASE_TIMEOUT_S = 10.0


class _Broken(PlateauError):
    """The helper's stream ended before it answered (the connection dropped)."""


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
    args: dict[str, Any],
    on_wait: Callable[[LeaseHolder], None] | None,
) -> LineStream:
    purpose = str(args["who"]["purpose"])
    try:
        stream = await stream_host_script(transport, host.python, "lease", args)
    except TransportError as exc:
        raise _Broken(str(exc)) from None
    try:
        async for line in stream:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if not isinstance(message, dict):
                continue
            state = message.get("state")
            if isinstance(message.get("refused"), str):
                raise PlateauError(f"{name}: refused: {sanitize(message['refused'][:400])}")
            if state == "held":
                return stream
            if state == "busy":
                raise HostBusy(name, LeaseHolder.from_record(message.get("holder")), purpose,
                               host.run_dir)
            if state == "lost":
                raise LeaseLost(name, _lost_reason(message, host))
            if state == "waiting" and on_wait is not None:
                on_wait(LeaseHolder.from_record(message.get("holder")))
        if stream.exit_status is None:
            raise _Broken(f"{name}: the connection dropped while taking the host lease")
        raise PlateauError(f"{name}: could not take the host lease in {host.run_dir}: "
                           f"{python_failed(host.python, stream.exit_status, '', seen=False)}")
    except TransportError as exc:
        await stream.close()
        raise _Broken(str(exc)) from None
    except BaseException:
        await stream.close()
        raise


def _lost_reason(message: dict[str, Any], host: HostConfig) -> str:
    holder = LeaseHolder.from_record(message.get("holder"))
    why = message.get("why")
    if why == "expired":
        return (f"the connection was away longer than the lease's grace of "
                f"{host.lease_grace_s:g} s, and the host released it")
    if why == "taken":
        return f"while the connection was away, it was taken by {holder.describe()}"
    return "the host no longer holds it for this process"


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
