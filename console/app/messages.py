"""Messages from the session pumps to the app. Coalesced: a run of queued `HostChanged` for the
same host and aspects collapses to the newest, since the renderer reads the state anyway."""

from __future__ import annotations

from textual.message import Message


class HostChanged(Message):
    """Host `host`'s state changed in `aspects`; the state already holds the new data."""

    def __init__(self, host: str, aspects: tuple[str, ...]) -> None:
        super().__init__()
        self.host = host
        self.aspects = aspects

    def can_replace(self, message: Message) -> bool:
        return (
            isinstance(message, HostChanged)
            and message.host == self.host
            and message.aspects == self.aspects
        )


class ActiveHostChanged(Message):
    def __init__(self, host: str) -> None:
        super().__init__()
        self.host = host


class CommandSent(Message):
    """The app sent a command (restart, sweep, ...) to a host's session."""

    def __init__(self, host: str, command: str, argument: str | None = None) -> None:
        super().__init__()
        self.host = host
        self.command = command
        self.argument = argument
