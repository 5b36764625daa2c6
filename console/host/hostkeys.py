"""Host key verification: known_hosts first; unknown keys refused unless accepted; changed
keys always refused."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import asyncssh

Verdict = Literal["unknown", "changed"]

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

    def message(self) -> str:
        where = f"{self.host}:{self.port}"
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
        return (
            f"unknown host key for {where}: {self.key_type} {self.fingerprint}{mismatch}. "
            "Refusing to connect. If this fingerprint is right, accept it (answer the "
            f"console's prompt, run the command with {ACCEPT_ENV}={self.fingerprint}, or set "
            f"known_hosts = \"accept-new\" for this host) and it will be saved to "
            f"{self.known_hosts}."
        )


def known_hosts_entry_name(host: str, port: int) -> str:
    return host if port == 22 else f"[{host}]:{port}"


def host_has_entries(known_hosts: Path, host: str, port: int) -> bool:
    """True when known_hosts lists any key for this host (so a new key means *changed*)."""
    if not known_hosts.is_file():
        return False
    try:
        trusted = asyncssh.read_known_hosts(str(known_hosts))
    except (OSError, ValueError, asyncssh.KeyImportError):
        return False
    host_keys, ca_keys, revoked, *_rest = trusted.match(host, "", port)
    return bool(host_keys or ca_keys or revoked)


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
    ) -> None:
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
        changed = host_has_entries(self._known_hosts, self._host, self._port)
        verdict: Verdict = "changed" if changed else "unknown"
        if not changed and (
            self._policy == "accept-new" or self._accept_fingerprint == fingerprint
        ):
            append_known_host(self._known_hosts, self._host, self._port, key)
            return True
        offered = self._accept_fingerprint if self._accept_fingerprint != fingerprint else None
        self.problem = HostKeyProblem(
            verdict, self._host, self._port, fingerprint, key.get_algorithm(), self._known_hosts,
            offered=offered if verdict == "unknown" else None,
        )
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if callable(self._on_lost):
            self._on_lost(exc)
