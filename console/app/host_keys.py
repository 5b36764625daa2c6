"""An unknown host key: the question on screen (once at a time per host), and the operator's
answer handed to the host's session, which records the decision in the host's event log."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from textual import on

from console.app.base import ConsoleBase
from console.app.messages import HostKeyDecided


class HostKeyPrompts(ConsoleBase):
    def ask_host_key(self, name: str) -> None:
        """Ask about `name`'s pending unknown host key (once at a time per host); the answer
        goes to the session, which records the decision in the host's event log."""
        session = self.sessions.get(name)
        key = session.state.host_key if session is not None else None
        if session is None or key is None:
            return
        from console.app.screens.modals import HostKeyScreen

        if any(isinstance(s, HostKeyScreen) and s.key.host == name for s in self.screen_stack):
            return

        def decided(accept: bool | None) -> None:
            if session.state.host_key is not key:  # connected meanwhile, or a newer key
                self.call_later(self.ask_host_key, name)
                return
            self.post_message(HostKeyDecided(name, key.fingerprint, bool(accept)))

        self.push_screen(HostKeyScreen(key), decided)

    @on(HostKeyDecided)
    def _host_key_decided(self, intent: HostKeyDecided) -> None:
        session = self.sessions[intent.host]
        work: Coroutine[Any, Any, bool | None] = (
            session.accept_host_key(intent.fingerprint) if intent.accept
            else session.refuse_host_key())
        self._hand_over(intent, "host key decision", work)
