"""Which SSH cipher the console asks for first.

asyncssh, like OpenSSH, offers chacha20-poly1305 first. OpenSSH runs it in C; asyncssh runs
it as several `cryptography` calls per packet: measured here 27.6 µs to seal a 240-byte
packet against 3.5 µs for aes128-gcm (tests/bench/bench_sweep_forward.py prints both). A
sweep's stream is thousands of small packets a second, so the cipher was most of a relay's
CPU. AES-GCM is in OpenSSH's default set as well, so asking for it first changes no policy:
the same algorithms stay allowed, only the order moves. A user whose ssh config names
`Ciphers` keeps exactly that choice (we never override it).
"""

from __future__ import annotations

import re
from pathlib import Path

PREFERRED = "^aes128-gcm@openssh.com,aes256-gcm@openssh.com"
_CIPHERS_LINE = re.compile(r"^\s*ciphers(\s|=)", re.IGNORECASE | re.MULTILINE)


def encryption_preference(use_ssh_config: bool, config_path: Path | None = None) -> str | None:
    """The `encryption_algs` to pass to asyncssh, or None to leave the ssh config's choice."""
    if use_ssh_config and _config_names_ciphers(config_path or Path("~/.ssh/config").expanduser()):
        return None
    return PREFERRED


def _config_names_ciphers(path: Path) -> bool:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return False
    return _CIPHERS_LINE.search(text) is not None
