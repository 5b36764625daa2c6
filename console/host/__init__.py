"""How we reach a machine: one Transport protocol, a local and an SSH implementation."""

from console.host.transport import (
    CommandResult,
    ConnectionEvent,
    DetachedProcess,
    LineStream,
    PortForward,
    Transport,
)

__all__ = [
    "CommandResult",
    "ConnectionEvent",
    "DetachedProcess",
    "LineStream",
    "PortForward",
    "Transport",
]
