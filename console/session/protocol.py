"""What the console app needs from a per-host session (live or replayed)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Protocol

from console.host.transport import Transport
from console.session.events import SessionEvent
from console.session.feed import Change
from console.session.profile_set import ProfileSet
from console.session.state import HostState

if TYPE_CHECKING:  # what a job or the flags editor hands over: not the console's start-up
    from console.config_models import HostConfig
    from console.diagnose.log_diagnosis import LogDiagnosis
    from console.jobs.ab_models import ABRequest
    from console.jobs.tune_bench import TuneBench
    from console.server.flags import FlagSchema
    from console.server.records import LaunchRecord
    from console.store.db import RunStore


class Session(Protocol):
    host: HostConfig
    state: HostState
    transport: Transport | None
    """The host's connection (None: not connected, or a replay)."""
    log_diagnosis: LogDiagnosis | None
    """A log file's diagnosis (`plateau --log FILE`): the Why view shows it; else None."""

    @property
    def replay_label(self) -> str:
        """What the header says of a recording or a log file; "" for a live host."""
        ...

    async def start(self) -> None:
        """Begin connecting and collecting in the background; returns at once."""
        ...

    def events(self) -> AsyncIterator[SessionEvent]:
        """Events in order, each already folded into `state`. One consumer."""
        ...

    def changes(self) -> AsyncIterator[Change]:
        """`events()` with the aspects of `state` each changed (what the app redraws)."""
        ...

    def emit(self, event: SessionEvent) -> None:
        """Fold `event` into `state` and queue it for `changes()`: what the console's own jobs
        on the host (a tune's sweeps) report, as the session's own work does."""
        ...

    async def restart(self, profile: str | None = None) -> None: ...

    async def start_sweep(self, preset: str = "default") -> None: ...

    async def cancel_sweep(self) -> None:
        """Cancel the running sweep or A/B."""
        ...

    async def start_ab(self, request: ABRequest) -> None: ...

    def tune_bench(self, store: RunStore) -> TuneBench:
        """Where `plateau tune`'s job (run by the console's Tune view) restarts, sweeps and
        validates on this host; PlateauError when it cannot (not connected, a replay)."""
        ...

    def share_profiles(self, profiles: ProfileSet) -> None:
        """Use the console's profile set from now on (the flags editor adds to it)."""
        ...

    async def flag_schema(self, profile: str) -> FlagSchema:
        """The host's discovered flag schema (console.server FlagSchema) for `profile`."""
        ...

    async def server_record(self) -> LaunchRecord | None:
        """The running server's launch record, or None."""
        ...

    async def accept_host_key(self, fingerprint: str) -> bool:
        """Connect accepting exactly this pending unknown host key (saved to known_hosts)."""
        ...

    async def refuse_host_key(self) -> None:
        """The operator refused the pending unknown host key: stay disconnected."""
        ...

    def set_pace(self, on_screen: bool, in_detail: bool = True) -> None:
        """Sample at the full rate while the host's figures are on screen, slower otherwise;
        `in_detail` False: on screen as a fleet row only."""
        ...

    async def close(self) -> None: ...
