"""`ssh ALIAS`'s options from an OpenSSH client config, by asyncssh's parser of the file, and
which `Host` lines applied on the way (console/hostsources/ssh_config.py says why).

asyncssh's parser runs a `Match exec` command in a shell when it evaluates it. Reading hosts
must never run a command (it happens on every command that loads the config), so a `Match`
line whose `exec` would be evaluated for the alias is refused with its file and line, as
ProxyCommand is; one whose earlier criterion already failed is parsed as usual (neither
asyncssh nor ssh evaluates the exec then).
"""

from __future__ import annotations

import getpass
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from asyncssh.config import ConfigParseError, SSHClientConfig

from console.hostsources.origin import HostSourceError

_NO_ARGUMENT = ("all", "canonical", "final")  # Match criteria that take no pattern
_KEYS = ("Hostname", "User", "Port", "IdentityFile", "UserKnownHostsFile", "ProxyJump",
         "ProxyCommand")


@dataclass(frozen=True)
class Resolved:
    options: dict[str, Any]
    applied: frozenset[tuple[Path, int]]
    """(file, line) of every Host line whose block applied to the alias."""


class _TracedConfig(SSHClientConfig):
    """asyncssh's client config, noting each Host line that starts an applying block."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.applied: set[tuple[Path, int]] = set()

    def _traced_host(self, option: str, args: list[str]) -> None:
        SSHClientConfig._match_host(self, option, args)
        if self._matching:
            self.applied.add((self._path, self._line_no))

    def _match_without_exec(self, option: str, args: list[str]) -> None:
        before = _before_exec(args)
        if before is not None:
            SSHClientConfig._match(self, option, before)
            if self._matching:
                self._error("Match exec is not supported (Plateau never runs a command while "
                            "it reads hosts)")
        SSHClientConfig._match(self, option, args)

    _handlers = {**SSHClientConfig._handlers, "host": ("Host", _traced_host),
                 "match": ("Match", _match_without_exec)}


def _before_exec(args: list[str]) -> list[str] | None:
    """The criteria before a Match line's first `exec` (or `!exec`), None without one."""
    index = 0
    while index < len(args):
        criterion = args[index].lower().lstrip("!")
        if criterion == "exec":
            return args[:index]
        index += 1 if criterion in _NO_ARGUMENT else 2
    return None


def ssh_options(path: Path, alias: str, where: Path, line: int) -> Resolved:
    """The options `ssh ALIAS` takes from `path`; errors name `where:line` (the alias's Host
    line) when asyncssh's own message names no line."""
    try:
        config = _TracedConfig.load(None, [path], False, False, False,
                                    getpass.getuser(), (), alias, ())
    except ConfigParseError as exc:  # "FILE line N: reason", or a bare reason (a %-token)
        location, _, reason = str(exc).partition(": ")
        file, _, number = location.rpartition(" line ")
        if number.isdigit():
            raise HostSourceError(f"{file}:{number}: {reason}") from None
        raise HostSourceError(f"{where}:{line} (Host {alias}): {exc}") from None
    except OSError as exc:
        raise HostSourceError(f"{where}:{line} (Host {alias}): {exc}") from None
    assert isinstance(config, _TracedConfig)
    return Resolved({name: config.get(name) for name in _KEYS}, frozenset(config.applied))
