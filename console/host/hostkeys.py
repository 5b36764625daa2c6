"""Host key verification: known_hosts first; unknown keys refused unless accepted; changed
keys always refused."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import asyncssh

Verdict = Literal["unknown", "changed", "revoked"]

# A headless command accepts one unknown key by naming its fingerprint (never "any key").
ACCEPT_ENV = "PLATEAU_ACCEPT_HOST_KEY"


@dataclass(frozen=True)
class HostKeyProblem:
    verdict: Verdict
    host: str
    port: int
    fingerprint: str
    key_type: str
    known_hosts: Path
    # The fingerprint the caller offered to accept, when it was not the one presented.
    offered: str | None = None
    # known_hosts has @cert-authority lines for the host and nothing else (not checked here)
    ca_only: bool = False
    role: str = ""  # "jump host " when the key is the jump host's

    def message(self) -> str:
        where = f"{self.role}{self.host}:{self.port}"
        if self.verdict == "revoked":
            return (
                f"REVOKED HOST KEY for {where}: it presents {self.key_type} {self.fingerprint}, "
                f"which {self.known_hosts} marks @revoked. Refusing to connect (a revoked key "
                "is never accepted, whatever the policy)."
            )
        if self.verdict == "changed":
            return (
                f"HOST KEY CHANGED for {where}: it now presents {self.key_type} "
                f"{self.fingerprint}, which does not match {self.known_hosts}. This may be an "
                "attack (or a reinstalled host). Refusing to connect; remove the old entry "
                "only after verifying the new key out of band."
            )
        mismatch = (
            f" (the fingerprint given to accept, {self.offered}, is not this key's)"
            if self.offered else ""
        )
        if self.ca_only:
            mismatch += (
                f" ({self.known_hosts} has only @cert-authority lines for it: Plateau does "
                "not check host certificates, so it needs the host's own key there)"
            )
        return (
            f"unknown host key for {where}: {self.key_type} {self.fingerprint}{mismatch}. "
            "Refusing to connect. If this fingerprint is right, accept it (answer the "
            f"console's prompt, run the command with {ACCEPT_ENV}={self.fingerprint}, or set "
            f"known_hosts = \"accept-new\" for this host) and it will be saved to "
            f"{self.known_hosts}."
        )


def known_hosts_entry_name(host: str, port: int) -> str:
    return host if port == 22 else f"[{host}]:{port}"


@dataclass
class KnownHostsMatch:
    """The known_hosts lines that apply to one host and port, as OpenSSH selects them."""

    host_keys: list[asyncssh.SSHKey] = field(default_factory=list)
    ca_keys: list[asyncssh.SSHKey] = field(default_factory=list)
    revoked: list[asyncssh.SSHKey] = field(default_factory=list)

    @property
    def any(self) -> bool:
        return bool(self.host_keys or self.ca_keys or self.revoked)

    def is_revoked(self, key: asyncssh.SSHKey) -> bool:
        return any(key == bad for bad in self.revoked)

    def for_asyncssh(self) -> tuple[list[asyncssh.SSHKey], list[asyncssh.SSHKey], list[object]]:
        """(trusted keys, CA keys, revoked) with no further matching by asyncssh (whose own
        matcher retries a non-22 port without it). A revoked key is never trusted, and is
        left to `VerifyingClient`, which refuses it with a clear problem. Host certificates
        are not checked: given CA keys, asyncssh offers only certificate algorithms, and a
        host without a certificate drops the connection ("Connection lost"), so the host's
        own key is asked for instead (`HostKeyProblem.ca_only`)."""
        trusted = [k for k in self.host_keys if not self.is_revoked(k)]
        return trusted, [], []


def _glob(pattern: str) -> re.Pattern[str]:
    # OpenSSH's match_pattern: `*` and `?` only (brackets are literal, as in "[host]:port").
    return re.compile("".join(
        ".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern
    ))


def _hashed_match(entry: str, name: str) -> bool:
    """`|1|salt|hash`: HMAC-SHA1 of the name keyed by the salt (HashKnownHosts)."""
    parts = entry.split("|")
    if len(parts) != 4 or parts[1] != "1":
        return False
    try:
        salt, digest = base64.b64decode(parts[2]), base64.b64decode(parts[3])
    except ValueError:
        return False
    mine = hmac.new(salt, name.encode(), hashlib.sha1).digest()
    return hmac.compare_digest(mine, digest)


def host_field_matches(field_text: str, name: str) -> bool:
    """OpenSSH's match_hostname: any negated pattern that matches excludes the line;
    otherwise any positive (or hashed) pattern that matches selects it."""
    name = name.lower()
    if field_text.startswith("|"):
        return _hashed_match(field_text, name)
    matched = False
    for pattern in field_text.lower().split(","):
        negated = pattern.startswith("!")
        if _glob(pattern[1:] if negated else pattern).fullmatch(name):
            if negated:
                return False
            matched = True
    return matched


def match_known_hosts(known_hosts: Path, host: str, port: int) -> KnownHostsMatch:
    """The keys known_hosts lists for `host` on `port`, matched like OpenSSH: a non-22 port
    is looked up only as "[host]:port" (a plain "host" entry means port 22), hashed names,
    `*`/`?` wildcards and `!` negation; `@revoked` and `@cert-authority` markers."""
    found = KnownHostsMatch()
    try:
        text = known_hosts.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return found
    name = known_hosts_entry_name(host, port)
    for line in text.splitlines():
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        marker = fields.pop(0)[1:] if fields[0].startswith("@") else None
        if len(fields) < 3 or not host_field_matches(fields[0], name):
            continue
        try:
            key = asyncssh.import_public_key(f"{fields[1]} {fields[2]}")
        except (asyncssh.KeyImportError, ValueError):
            continue
        if marker == "revoked":
            found.revoked.append(key)
        elif marker == "cert-authority":
            found.ca_keys.append(key)
        elif marker is None:
            found.host_keys.append(key)
    return found


def host_has_entries(known_hosts: Path, host: str, port: int) -> bool:
    """True when known_hosts lists any key for this host (so a new key means *changed*)."""
    return match_known_hosts(known_hosts, host, port).any


def append_known_host(known_hosts: Path, host: str, port: int, key: asyncssh.SSHKey) -> None:
    known_hosts.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    line = f"{known_hosts_entry_name(host, port)} {key.export_public_key().decode().strip()}\n"
    with known_hosts.open("a", encoding="utf-8") as handle:
        handle.write(line)


class VerifyingClient(asyncssh.SSHClient):
    """Called by asyncssh only for keys that known_hosts does not already trust."""

    def __init__(
        self,
        *,
        host: str,
        port: int,
        known_hosts: Path,
        policy: Literal["strict", "accept-new"],
        accept_fingerprint: str | None,
        on_lost: object = None,
        role: str = "",
    ) -> None:
        self._role = role
        self._host = host
        self._port = port
        self._known_hosts = known_hosts
        self._policy = policy
        self._accept_fingerprint = accept_fingerprint
        self._on_lost = on_lost
        self.problem: HostKeyProblem | None = None

    def validate_host_public_key(
        self, host: str, addr: str, port: int, key: asyncssh.SSHKey
    ) -> bool:
        fingerprint = key.get_fingerprint("sha256")
        known = match_known_hosts(self._known_hosts, self._host, self._port)
        changed = bool(known.host_keys or known.revoked)  # CA lines are not checked
        verdict: Verdict = "revoked" if known.is_revoked(key) else (
            "changed" if changed else "unknown"
        )
        if not changed and (
            self._policy == "accept-new" or self._accept_fingerprint == fingerprint
        ):
            append_known_host(self._known_hosts, self._host, self._port, key)
            return True
        offered = self._accept_fingerprint if self._accept_fingerprint != fingerprint else None
        self.problem = HostKeyProblem(
            verdict, self._host, self._port, fingerprint, key.get_algorithm(), self._known_hosts,
            offered=offered if verdict == "unknown" else None,
            ca_only=bool(known.ca_keys) and not changed, role=self._role,
        )
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if callable(self._on_lost):
            self._on_lost(exc)
