"""A session that plays a fixed list of events: recorded sessions, the deterministic data of
snapshot tests, and looking at a host's state after the fact. Commands are recorded, not run."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field

from console.config_models import HostConfig, ServerProfile
from console.server.flags import FlagSchema
from console.server.records import LaunchRecord
from console.session.events import Problem, SessionEvent
from console.session.feed import EventFeed
from console.session.state import Clock, HostState, utc_now


@dataclass
class ReplaySession(EventFeed):
    host: HostConfig
    script: list[SessionEvent] = field(default_factory=list)
    clock: Clock = utc_now
    state: HostState = field(init=False)
    commands: list[tuple[str, str | None]] = field(default_factory=list)
    profiles: dict[str, ServerProfile] = field(default_factory=dict)
    _queue: asyncio.Queue[SessionEvent | None] = field(init=False)

    def __post_init__(self) -> None:
        self.state = HostState(self.host.name, clock=self.clock)
        self._queue = asyncio.Queue()

    @classmethod
    def from_events(
        cls, host: HostConfig, events: Iterable[SessionEvent], clock: Clock = utc_now
    ) -> ReplaySession:
        return cls(host=host, script=list(events), clock=clock)

    async def start(self) -> None:
        for event in self.script:
            self.feed(event)

    def feed(self, event: SessionEvent) -> None:
        """Fold an event into state and hand it to the consumer (tests push more this way)."""
        self.emit(event)

    async def restart(self, profile: str | None = None) -> None:
        self._command("restart", profile)

    async def start_sweep(self, preset: str = "default") -> None:
        self._command("sweep", preset)

    async def cancel_sweep(self) -> None:
        self._command("cancel-sweep", None)

    async def start_ab(self, a: str, b: str, preset: str = "default") -> None:
        self._command("ab", f"{a} vs {b} ({preset})")

    async def accept_host_key(self, fingerprint: str) -> bool:
        self._command("accept-host-key", fingerprint)
        return False

    async def refuse_host_key(self) -> None:
        self._command("refuse-host-key", None)

    def set_profiles(self, profiles: dict[str, ServerProfile]) -> None:
        self.profiles = dict(profiles)

    async def flag_schema(self, profile: str) -> FlagSchema:
        raise RuntimeError("a replay has no host to discover flags on")

    async def server_record(self) -> LaunchRecord | None:
        return None

    def _command(self, name: str, arg: str | None) -> None:
        self.commands.append((name, arg))
        self.feed(
            Problem(self.host.name, "replay", f"{name} not run: this is a replay", level="info")
        )

    async def close(self) -> None:
        self.end_events()
