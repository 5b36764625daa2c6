"""Where a configured host came from, for `config show` and for errors."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

HostKind = Literal["config", "inventory", "ssh_config"]


@dataclass(frozen=True)
class HostOrigin:
    """One host's source: `source` is 'FILE:LINE' (plus the ssh Host line's alias); `where`
    names the source of each key that is not the entry's own line in the config file."""

    kind: HostKind
    source: str
    where: dict[str, str] = field(default_factory=dict)


class HostSourceError(Exception):
    """A host source is wrong; the message already names file, key and line."""
