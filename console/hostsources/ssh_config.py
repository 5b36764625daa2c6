"""Hosts from an OpenSSH client config (`[ssh_config] include = ["gpu-*"]`).

Every `Host` line's literal aliases (no `*`, `?` or `!`: a wildcard block holds defaults for
other hosts, it is no host) that `include` selects and `exclude` does not become hosts. Each is
then resolved the way `ssh ALIAS` resolves it, by asyncssh's own parser of the same file
(first value wins, `Include`, `Match`, `%h`-style tokens): HostName, User, Port, ProxyJump,
IdentityFile and UserKnownHostsFile. `ProxyCommand` has no equivalent here and is refused.
"""

from __future__ import annotations

import getpass
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from console.hostsources.origin import HostSourceError

_WILDCARDS = ("*", "?", "!")
_MAX_INCLUDE_DEPTH = 16  # OpenSSH's own READCONF_MAX_DEPTH
_MAX_JUMP_DEPTH = 8


@dataclass(frozen=True)
class SshHost:
    """One selected alias: where its Host line is, and the HostConfig keys it resolves to."""

    alias: str
    path: Path
    line: int
    values: dict[str, Any]


def ssh_hosts(path: Path, include: list[str], exclude: list[str]) -> list[SshHost]:
    """The aliases of `path` (and the files it includes) selected by the patterns, resolved,
    in file order; an alias named on several Host lines counts once (its first)."""
    seen: dict[str, tuple[Path, int]] = {}
    for alias, where, line in _aliases(path, 0):
        selected = any(fnmatchcase(alias, p) for p in include)
        if selected and not any(fnmatchcase(alias, p) for p in exclude):
            seen.setdefault(alias, (where, line))
    return [SshHost(alias, where, line, resolve(path, alias, where, line))
            for alias, (where, line) in seen.items()]


def _aliases(path: Path, depth: int) -> Iterator[tuple[str, Path, int]]:
    """(alias, file, line) of every literal Host alias, following Include like ssh does."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        raise HostSourceError(f"{path}: cannot read ssh config ({exc.strerror})") from None
    for number, raw in enumerate(lines, start=1):
        words = _words(raw, path, number)
        if not words:
            continue
        keyword = words[0].lower()
        if keyword == "host":
            for alias in words[1:]:
                if not any(c in alias for c in _WILDCARDS):
                    yield alias, path, number
        elif keyword == "include" and depth < _MAX_INCLUDE_DEPTH:
            for included in _included(words[1:]):
                yield from _aliases(included, depth + 1)


def _words(raw: str, path: Path, number: int) -> list[str]:
    line = raw.strip()
    if not line or line.startswith("#"):
        return []
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise HostSourceError(f"{path}:{number}: {exc}") from None
    # `Host=a b` and `Host = a`: OpenSSH takes '=' between keyword and value.
    first, _, rest = words[0].partition("=")
    return [first, *([rest] if rest else []), *(w for w in words[1:] if w != "=")]


def _included(patterns: list[str]) -> list[Path]:
    """The files an Include names: relative ones under ~/.ssh (as OpenSSH and asyncssh)."""
    found: list[Path] = []
    for pattern in patterns:
        expanded = Path(pattern).expanduser()
        base = Path(expanded.anchor) if expanded.anchor else Path("~/.ssh").expanduser()
        relative = str(Path(*expanded.parts[1:])) if expanded.anchor else pattern
        found += sorted(p for p in base.glob(relative) if p.is_file())
    return found


def resolve(path: Path, alias: str, where: Path, line: int) -> dict[str, Any]:
    """HostConfig keys for `ssh ALIAS` under the config at `path`."""
    options = _options(path, alias, where, line)
    if options.get("ProxyCommand"):
        raise HostSourceError(f"{where}:{line} (Host {alias}): ProxyCommand is not supported "
                              "(ProxyJump is)")
    values: dict[str, Any] = {"name": alias, "address": options.get("Hostname") or alias}
    if options.get("User"):
        values["user"] = options["User"]
    if options.get("Port"):
        values["port"] = options["Port"]
    if options.get("IdentityFile"):
        values["identity_files"] = list(options["IdentityFile"])
    known_hosts = options.get("UserKnownHostsFile")
    if known_hosts:
        values["known_hosts_file"] = known_hosts[0]
    jump = _jump_chain(path, options.get("ProxyJump"), where, line, 0)
    if jump:
        values["jump_host"] = jump
    return values


def _options(path: Path, alias: str, where: Path, line: int) -> dict[str, Any]:
    from asyncssh.config import ConfigParseError, SSHClientConfig  # only when configured

    try:
        config = SSHClientConfig.load(None, [path], False, False, False,
                                      getpass.getuser(), (), alias, ())
    except ConfigParseError as exc:  # "FILE line N: reason", or a bare reason (a %-token)
        location, _, reason = str(exc).partition(": ")
        file, _, number = location.rpartition(" line ")
        if number.isdigit():
            raise HostSourceError(f"{file}:{number}: {reason}") from None
        raise HostSourceError(f"{where}:{line} (Host {alias}): {exc}") from None
    except OSError as exc:
        raise HostSourceError(f"{where}:{line} (Host {alias}): {exc}") from None
    return {name: config.get(name) for name in (
        "Hostname", "User", "Port", "IdentityFile", "UserKnownHostsFile", "ProxyJump",
        "ProxyCommand")}


def _jump_chain(path: Path, jump: object, where: Path, line: int, depth: int) -> str | None:
    """ProxyJump as `[user@]host[:port]` hops, each resolved through the same file as ssh
    resolves it (its HostName, User, Port, and its own ProxyJump before it)."""
    if not isinstance(jump, str) or not jump or jump.lower() == "none":
        return None
    if depth >= _MAX_JUMP_DEPTH:
        raise HostSourceError(f"{where}:{line}: ProxyJump chain deeper than {_MAX_JUMP_DEPTH}")
    hops: list[str] = []
    for hop in jump.split(","):
        user, _, target = hop.rpartition("@")
        host, _, port = target.partition(":")
        options = _options(path, host, where, line)
        before = _jump_chain(path, options.get("ProxyJump"), where, line, depth + 1)
        hops += [before] if before else []
        user = user or str(options.get("User") or "")
        port = port or str(options.get("Port") or "")
        hops.append(f"{user + '@' if user else ''}{options.get('Hostname') or host}"
                    f"{':' + port if port else ''}")
    return ",".join(hops)
