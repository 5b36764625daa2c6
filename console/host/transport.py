"""The Transport protocol every service is written against.

Commands are always argv lists. LocalTransport execs them directly; SshTransport sends a
fixed bootstrap carrying the arguments as base64 (see `scripts.command_line`), so nothing a
user types is ever parsed by a shell, whatever the host's login shell is.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal, Protocol, runtime_checkable


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    exit_status: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.exit_status == 0


@dataclass(frozen=True)
class DetachedProcess:
    """A process started in its own session: pid == pgid == sid."""

    pid: int
    pgid: int
    log_path: str


@dataclass(frozen=True)
class ConnectionEvent:
    """Connection state changes, reported to whoever subscribed (the app's event log)."""

    host: str
    kind: Literal["connected", "lost", "reconnecting", "reconnected", "failed", "closed"]
    detail: str = ""
    at: datetime = field(default_factory=lambda: datetime.now(UTC))


class LineStream(Protocol):
    """Lines of a long-running command. Closing it kills the command on the host."""

    def __aiter__(self) -> AsyncIterator[str]: ...

    async def close(self) -> None: ...

    async def __aenter__(self) -> LineStream: ...

    async def __aexit__(self, *exc: object) -> None: ...

    @property
    def exit_status(self) -> int | None: ...


class PortForward(Protocol):
    """A local listener on 127.0.0.1 that reaches the host's 127.0.0.1:remote_port."""

    @property
    def local_port(self) -> int: ...

    async def close(self) -> None: ...


@runtime_checkable
class Transport(Protocol):
    """Everything the services need from a host."""

    @property
    def host_name(self) -> str: ...

    async def connect(self) -> None: ...

    async def close(self) -> None: ...

    async def run(
        self,
        argv: Sequence[str],
        *,
        input: str | None = None,
        timeout: float | None = 60.0,
        env: Mapping[str, str] | None = None,
    ) -> CommandResult: ...

    async def stream_lines(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
    ) -> LineStream:
        """Start `argv` and return its stdout lines (without newline, undecodable bytes
        replaced). Closing the stream kills the whole process group on the host. The
        command's stdin is /dev/null (the transport uses the channel's stdin as a watchdog),
        so pass programs as files (`install_program`), not on stdin."""
        ...

    async def start_detached(
        self,
        argv: Sequence[str],
        *,
        log_path: str,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> DetachedProcess:
        """Start `argv` with `setsid nohup`, stdout+stderr appended to `log_path`; it
        survives the transport closing."""
        ...

    async def signal_group(self, pgid: int, signal_name: str) -> bool:
        """Send SIGNAL_NAME (e.g. "TERM", "KILL") to process group `pgid`. False if gone."""
        ...

    async def is_alive(self, pid: int) -> bool: ...

    async def home_dir(self) -> str:
        """The home directory on the host (resolved there once per connection)."""
        ...

    async def resolve_path(self, path: str) -> str:
        """PATH with a leading `~` resolved on the host: use the result everywhere."""
        ...

    async def install_program(self, name: str, source: str) -> str:
        """Copy a host-side Python program into `<run_dir>/bin` (content-addressed, verified
        by hash) and return its absolute path on the host, to run as `python3 PATH ARGS`."""
        ...

    async def read_file(self, path: str) -> bytes: ...

    async def write_file(self, path: str, data: bytes, *, mode: int = 0o644) -> None: ...

    async def forward_port(self, remote_port: int) -> PortForward: ...

    def subscribe(self, callback: Callable[[ConnectionEvent], None]) -> None:
        """Receive connection events (drops, reconnects). Callbacks must not block."""
        ...
