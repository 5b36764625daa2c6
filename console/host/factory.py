"""Build the right transport for a configured host."""

from __future__ import annotations

from pathlib import Path

from console.config_models import HostConfig
from console.host.local import LocalTransport
from console.host.ssh import SshTransport
from console.host.transport import Transport


def transport_for(
    host: HostConfig, *, accept_fingerprint: str | None = None, use_ssh_config: bool = True
) -> Transport:
    """LocalTransport for `local = true` hosts, SshTransport otherwise."""
    if host.local:
        return LocalTransport(host.name)
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
    )
