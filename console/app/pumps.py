"""Starting the hosts' sessions and pumping their events into the app.

The sessions start once the first frame is on the terminal, at most CONNECTS_AT_ONCE
connecting at a time, the active and on-screen hosts first; a pump worker per host turns each
of its events (already folded into its HostState) into a coalescing `HostChanged` message
(console.app.host_news draws it). Failed connections are tried again every RETRY_FAILED_S.
"""

from __future__ import annotations

import asyncio

from console.app.host_news import HostNews
from console.app.hosts import HostSwitching
from console.app.messages import HostChanged
from console.session.protocol import Session

CONNECTS_AT_ONCE = 8
CONNECT_HOLD_S = 5.0
RETRY_FAILED_S = 30.0

TERMINAL_GRACE_S = 0.1
"""After the first frame, how long the terminal has the CPU to itself before the sessions
start (a real terminal only; headless apps start them at once)."""

# What an off-screen host's events change that a screen shows anyway (the event log, the
# host-key question, the footer's host list); its GPU, log and load news wait for its turn.
_OFF_SCREEN_ASPECTS = frozenset({"events", "host-key", "connection", "server", "sweep"})


class SessionPumps(HostNews, HostSwitching):
    def _after_first_frame(self) -> None:
        if self.is_headless:
            self._start_sessions()
            return
        # The terminal has the frame to draw, and needs the CPU for it: starting the
        # sessions at once (their imports, connects and agents, ~0.1 s of CPU) delayed the
        # frame on screen by about as much on a 2-core machine (tmux, bench_app_startup.py).
        self.set_timer(TERMINAL_GRACE_S, self._start_sessions)

    def _start_sessions(self) -> None:
        """Start the sessions (PlateauApp boots first when it has a boot to run)."""
        self._start_pumps()

    async def _start_session(self, session: Session) -> None:
        """Start `session` when one of CONNECTS_AT_ONCE places is free; the place is held
        while it connects (at most CONNECT_HOLD_S: a hung host holds one place, not all),
        and its events flow meanwhile. 64 hosts connecting at once made their first commands
        time out on a loaded console (and a bastion's sshd drops unauthenticated connections
        beyond 10 by default). A recording starts at once."""
        from console.session.service import HostSession

        if not isinstance(session, HostSession):
            await session.start()
            return
        await self._connect_gate.acquire()
        try:
            await session.start()
        except BaseException:
            self._connect_gate.release()
            raise
        self.run_worker(self._hold_place(session), group="connect-gate", exit_on_error=False,
                        description=f"connect place of {session.host.name}")

    async def _hold_place(self, session: Session) -> None:
        try:
            held = 0.0
            while session.state.connection == "connecting" and held < CONNECT_HOLD_S:
                await asyncio.sleep(0.05)
                held += 0.05
        finally:
            self._connect_gate.release()

    def _retry_failed(self) -> None:
        """Connect again to hosts whose connection failed (a timeout, a refusal), as the
        exporter does; not after a host-key refusal: that is the operator's decision. A
        recording is replayed once."""
        from console.session.service import HostSession

        for session in self.sessions.values():
            state = session.state
            if isinstance(session, HostSession) and state.connection == "failed" \
                    and state.host_key is None \
                    and "HOST KEY" not in state.connection_detail:
                self.run_worker(self._start_session(session), group="reconnect",
                                exit_on_error=False)

    def _start_pumps(self) -> None:
        if self.start_screen != "fleet":
            self.set_on_screen_hosts([self.active_host])
        self._connect_gate = asyncio.Semaphore(CONNECTS_AT_ONCE)
        self.set_interval(RETRY_FAILED_S, self._retry_failed)
        # The active and on-screen hosts connect first.
        order = sorted(self.host_names, key=lambda n: (n != self.active_host,
                                                       n not in self.on_screen_hosts))
        for session in (self.sessions[name] for name in order):
            self.run_worker(
                self._pump(session),
                name=f"pump:{session.host.name}",
                group="pumps",
                exit_on_error=False,
                description=f"events of host {session.host.name}",
            )

    async def _pump(self, session: Session) -> None:
        await self._start_session(session)
        name = session.host.name
        self._session_started(name)
        seen = session.state.revision.get("events", 0)
        async for change in session.changes():  # HostState.apply's aspects
            aspects = change.aspects
            if "events" in aspects:
                # What start() brought (a replay's script) is drawn by _session_started: news
                # to notify only once the event log has grown past it.
                rev = session.state.revision.get("events", 0)
                if rev == seen:
                    aspects = tuple(a for a in aspects if a != "events")
                seen = rev
            if name not in self.on_screen_hosts:
                aspects = tuple(a for a in aspects if a in _OFF_SCREEN_ASPECTS)
            if aspects:
                self.post_message(HostChanged(name, aspects))
