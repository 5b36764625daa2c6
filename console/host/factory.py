"""Build the right transport for a configured host."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from console.config_models import HostConfig
from console.errors import UsageError
from console.host.local import LocalTransport
from console.host.transport import Transport

# What asyncssh's get_fingerprint("sha256") gives: "SHA256:" + 43 unpadded base64 characters.
_FINGERPRINT = re.compile(r"SHA256:[A-Za-z0-9+/]{43}")


def accept_fingerprint_from_env(environ: Mapping[str, str] | None = None) -> str | None:
    """The one host-key fingerprint `PLATEAU_ACCEPT_HOST_KEY` names, or None when unset.

    Only an exact SHA256 fingerprint is taken: there is deliberately no value meaning "any
    key", so the variable cannot turn into blanket trust."""
    from console.host.hostkeys import ACCEPT_ENV  # asyncssh: only SSH hosts pay for it

    value = (os.environ if environ is None else environ).get(ACCEPT_ENV, "").strip()
    if not value:
        return None
    if not _FINGERPRINT.fullmatch(value.removesuffix("=")):
        shown = value if len(value) <= 60 else value[:57] + "..."
        raise UsageError(
            f"{ACCEPT_ENV} must be one SHA256 host key fingerprint (SHA256:... exactly as the "
            f"refusal printed it), not {shown!r}"
        )
    return value.removesuffix("=")


def transport_for(
    host: HostConfig, *, accept_fingerprint: str | None = None, use_ssh_config: bool = True
) -> Transport:
    """LocalTransport for `local = true` hosts, SshTransport otherwise.

    `accept_fingerprint` (else `$PLATEAU_ACCEPT_HOST_KEY`) accepts exactly that unknown host
    key once and saves it to known_hosts; a changed key is refused regardless."""
    if host.local:
        return LocalTransport(host.name, run_dir=host.run_dir)
    from console.host.ssh import SshTransport  # asyncssh: only SSH hosts pay for it

    if accept_fingerprint is None:
        accept_fingerprint = accept_fingerprint_from_env()
    known_hosts = Path(host.known_hosts_file).expanduser() if host.known_hosts_file else None
    return SshTransport(
        host.name,
        host.address,
        port=host.port,
        username=host.user,
        identity_files=host.identity_files,
        known_hosts=known_hosts,
        policy=host.known_hosts,
        accept_fingerprint=accept_fingerprint,
        jump_host=host.jump_host,
        use_ssh_config=use_ssh_config,
        run_dir=host.run_dir,
        python=host.python,
    )
