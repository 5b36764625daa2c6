"""Hosts from an OpenSSH client config (`[ssh_config] include = ["gpu-*"]`).

Every `Host` line's literal aliases (no `*`, `?` or `!`: a wildcard block holds defaults for
other hosts, it is no host) that `include` selects and `exclude` does not become hosts. Each is
then resolved the way `ssh ALIAS` resolves it, by asyncssh's own parser of the same file
(first value wins, `Include`, `Match`, `%h`-style tokens): HostName, User, Port, ProxyJump,
IdentityFile and UserKnownHostsFile. `ProxyCommand` has no equivalent here and is refused.

An alias is a host only where its own `Host` line applies when ssh resolves that alias. This
matters for `Include` inside a `Host` or `Match` block: OpenSSH reads such a file for a host
only when the enclosing block applies to that host; otherwise it parses it with
SSHCONF_NEVERMATCH, so no `Host` or `Match` in it ever applies (openssh-portable readconf.c,
`process_config_line_depth`, `case oInclude:` passes `oactive ? 0 : SSHCONF_NEVERMATCH` to
`read_config_file_depth`, and `case oHost:` never activates under that flag; commit
0ef0f5a839831c213f24e3f2ae434765c607fb50). So aliases included under `Host *` are hosts;
under `Host bastion` they are not (`ssh -G gpu-05` ignores their block: it would connect to
`gpu-05` itself); under `Host gpu-*` or `Match host gpu-*` they are when they match. asyncssh
skips an Include in an inactive block the same way (asyncssh/config.py, `SSHConfig.parse`),
and console/hostsources/ssh_options.py notes which Host lines applied while it resolved.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING, Any

from console.hostsources.origin import HostSourceError

if TYPE_CHECKING:  # asyncssh is imported only when an ssh config is configured
    from console.hostsources.ssh_options import Resolved

_WILDCARDS = ("*", "?", "!")
_MAX_INCLUDE_DEPTH = 16  # OpenSSH's own READCONF_MAX_DEPTH
# Files read through Include in all: without a cycle, each level including the next twice still
# reads 2**16 files within OpenSSH's depth (and asyncssh reads them again for every alias).
_MAX_INCLUDED_FILES = 256
_MAX_JUMP_DEPTH = 8


@dataclass(frozen=True)
class SshHost:
    """One selected alias: where its Host line is, and the HostConfig keys it resolves to."""

    alias: str
    path: Path
    line: int
    values: dict[str, Any]


def ssh_hosts(path: Path, include: list[str], exclude: list[str]) -> list[SshHost]:
    """The aliases of `path` (and the files it includes) selected by the patterns whose own
    Host line applies when ssh resolves them, resolved, in file order; an alias named on
    several Host lines counts once (its first that applies)."""
    from console.hostsources.ssh_options import ssh_options

    places: dict[str, list[tuple[Path, int]]] = {}
    for alias, where, line in _IncludeWalk().aliases(path, (path.resolve(),)):
        selected = any(fnmatchcase(alias, p) for p in include)
        if selected and not any(fnmatchcase(alias, p) for p in exclude):
            places.setdefault(alias, []).append((where, line))
    found: list[SshHost] = []
    for alias, candidates in places.items():
        resolved = ssh_options(path, alias, *candidates[0])
        applying = [place for place in candidates if place in resolved.applied]
        if applying:
            where, line = applying[0]
            found.append(SshHost(alias, where, line, _values(path, alias, resolved, where, line)))
    return found


class _IncludeWalk:
    """Every literal Host alias of a config and the files it includes, refusing an Include that
    reaches a file already being read (asyncssh would recurse into a RecursionError; ssh says
    "Too many recursive configuration includes"), deeper than OpenSSH's depth, or past
    _MAX_INCLUDED_FILES files in all. This walk runs before asyncssh reads the file, and follows
    every Include asyncssh can follow, so asyncssh never meets a cycle."""

    def __init__(self) -> None:
        self.included = 0

    def aliases(self, path: Path, chain: tuple[Path, ...]) -> Iterator[tuple[str, Path, int]]:
        """(alias, file, line) of every literal Host alias; `chain` is the resolved files
        being read, outermost first, `path`'s own last."""
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
            elif keyword == "include":
                for included in _included(words[1:]):
                    self._check(included, chain, f"{path}:{number}")
                    yield from self.aliases(included, (*chain, included.resolve()))

    def _check(self, included: Path, chain: tuple[Path, ...], where: str) -> None:
        if included.resolve() in chain:
            cycle = " -> ".join(str(p) for p in (*chain, included.resolve()))
            raise HostSourceError(f"{where}: Include cycle: {cycle}")
        if len(chain) > _MAX_INCLUDE_DEPTH:
            raise HostSourceError(f"{where}: Include nested deeper than {_MAX_INCLUDE_DEPTH} "
                                  "files (OpenSSH's limit)")
        self.included += 1
        if self.included > _MAX_INCLUDED_FILES:
            raise HostSourceError(f"{where}: Include reads more than {_MAX_INCLUDED_FILES} "
                                  "files in all")


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


def _values(
    path: Path, alias: str, resolved: Resolved, where: Path, line: int
) -> dict[str, Any]:
    """HostConfig keys for `ssh ALIAS` under the config at `path`."""
    options = resolved.options
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


def _jump_chain(path: Path, jump: object, where: Path, line: int, depth: int) -> str | None:
    """ProxyJump as `[user@]host[:port]` hops, each resolved through the same file as ssh
    resolves it (its HostName, User, Port, and its own ProxyJump before it)."""
    if not isinstance(jump, str) or not jump or jump.lower() == "none":
        return None
    if depth >= _MAX_JUMP_DEPTH:
        raise HostSourceError(f"{where}:{line}: ProxyJump chain deeper than {_MAX_JUMP_DEPTH}")
    from console.hostsources.ssh_options import ssh_options

    hops: list[str] = []
    for hop in jump.split(","):
        user, _, target = hop.rpartition("@")
        host, _, port = target.partition(":")
        options = ssh_options(path, host, where, line).options
        before = _jump_chain(path, options.get("ProxyJump"), where, line, depth + 1)
        hops += [before] if before else []
        user = user or str(options.get("User") or "")
        port = port or str(options.get("Port") or "")
        hops.append(f"{user + '@' if user else ''}{options.get('Hostname') or host}"
                    f"{':' + port if port else ''}")
    return ",".join(hops)
