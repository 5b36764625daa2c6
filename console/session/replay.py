"""A session that plays a fixed list of events: recorded sessions (`plateau replay FILE`), the
deterministic data of snapshot tests, and looking at a host's state after the fact. Commands
are noted, not run."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from console.config_models import HostConfig
from console.host.transport import Transport
from console.jobs.ab_models import ABRequest
from console.server.flags import FlagSchema
from console.server.records import LaunchRecord
from console.session.events import Problem, SessionEvent
from console.session.feed import Change, EventFeed
from console.session.profile_set import ProfileSet
from console.session.recording import RecordedEvent
from console.session.state import Clock, HostState, utc_now

if TYPE_CHECKING:
    from console.diagnose.log_diagnosis import LogDiagnosis
    from console.jobs.tune_bench import TuneBench
    from console.store.db import RunStore


@dataclass
class ReplaySession(EventFeed):
    host: HostConfig
    script: list[SessionEvent] = field(default_factory=list)
    clock: Clock = utc_now
    state: HostState = field(init=False)
    commands: list[tuple[str, str | None]] = field(default_factory=list)
    profiles: ProfileSet | None = None
    timeline: list[RecordedEvent] = field(default_factory=list)
    """Recorded events with their times: played after `script`, at `speed` x real time."""
    speed: float = 1.0
    """1: as recorded; 4: four times faster; 0: all at once."""
    recorded_start: float | None = None
    """Unix time the recording began: a recording's events, uptime and clock are the recorded
    ones, not this machine's now (issue 26.8); None for scripted sessions (tests)."""
    label: str = ""
    """What the header says in place of REPLAY (a log file: "log FILE")."""
    transport: Transport | None = None
    """A replay runs nothing on a host: never connected."""
    log_diagnosis: LogDiagnosis | None = None
    """A log file's diagnosis (`plateau --log FILE`): the Why view shows it rather than the
    run store's."""
    _recorded_now: datetime | None = field(init=False, default=None)
    _queue: asyncio.Queue[Change | None] = field(init=False)
    _player: asyncio.Task[None] | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        if self.recorded_start is not None:
            self._recorded_now = datetime.fromtimestamp(self.recorded_start, UTC)
            self.clock = self._recorded_clock
        self.state = HostState(self.host.name, clock=self.clock)
        self._queue = asyncio.Queue()

    def _recorded_clock(self) -> datetime:
        """The recorded time of the event being played."""
        assert self._recorded_now is not None
        return self._recorded_now

    @property
    def replay_label(self) -> str:
        """What the header says of a recording or a log file ("" for a scripted session)."""
        if self.label:
            return self.label
        if self.recorded_start is None:
            return ""
        began = datetime.fromtimestamp(self.recorded_start, UTC).strftime("%Y-%m-%d %H:%M")
        # Z: UTC (the recording's clock is unix time; the replay shows it as recorded)
        return f"REPLAY {began}Z"

    @classmethod
    def from_events(
        cls, host: HostConfig, events: Iterable[SessionEvent], clock: Clock = utc_now
    ) -> ReplaySession:
        return cls(host=host, script=list(events), clock=clock)

    @classmethod
    def from_recording(
        cls, host: HostConfig, timeline: list[RecordedEvent], speed: float = 1.0,
        started_at: float | None = None,
    ) -> ReplaySession:
        return cls(host=host, timeline=timeline, speed=speed, recorded_start=started_at)

    async def start(self) -> None:
        for event in self.script:
            self.feed(event)
        if self.timeline:
            self._player = asyncio.ensure_future(self._play())

    async def _play(self) -> None:
        """Each recorded event at its time (divided by `speed`) after the replay began."""
        loop = asyncio.get_running_loop()
        began = loop.time()
        for recorded in self.timeline:
            if self.speed > 0:
                delay = began + recorded.at_s / self.speed - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
            if self.recorded_start is not None:
                self._recorded_now = datetime.fromtimestamp(
                    self.recorded_start + recorded.at_s, UTC)
            self.feed(recorded.event)
        self.feed(Problem(self.host.name, "replay", "end of the recording", level="info"))

    @property
    def finished(self) -> bool:
        """Every recorded event has been played."""
        return self._player is None or self._player.done()

    def feed(self, event: SessionEvent) -> None:
        """Fold an event into state and hand it to the consumer (tests push more this way)."""
        self.emit(event)

    async def restart(self, profile: str | None = None) -> None:
        self._command("restart", profile)

    async def start_sweep(self, preset: str = "default") -> None:
        self._command("sweep", preset)

    async def cancel_sweep(self) -> None:
        self._command("cancel-sweep", None)

    async def start_ab(self, request: ABRequest) -> None:
        self._command("ab", f"{request.a} vs {request.b} ({request.preset})")

    def tune_bench(self, store: RunStore) -> TuneBench:
        from console.errors import PlateauError

        raise PlateauError("a replay runs nothing on a host")

    async def accept_host_key(self, fingerprint: str) -> bool:
        self._command("accept-host-key", fingerprint)
        return False

    async def refuse_host_key(self) -> None:
        self._command("refuse-host-key", None)

    def share_profiles(self, profiles: ProfileSet) -> None:
        self.profiles = profiles

    def set_pace(self, on_screen: bool, in_detail: bool = True) -> None:
        """A recording plays at its own pace."""

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
        if self._player is not None:
            self._player.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._player
        self.end_events()
