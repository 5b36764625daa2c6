"""Errors the CLI turns into one clear line and a non-zero exit."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from console.host.hostkeys import HostKeyProblem


class PlateauError(Exception):
    """An error meant for the operator: its message is the whole story."""

    exit_code = 1


class UsageError(PlateauError):
    """Bad input from the operator (arguments, config)."""

    exit_code = 2


class ConfigError(UsageError):
    """A config file is malformed; the message names file, key and line."""


class StoreError(PlateauError):
    """The history database cannot be opened or written (not SQLite, read-only, disk full,
    a directory...). Here, not in console.store, so the sweep runner (below the store) can
    name it."""


class TransportError(PlateauError):
    """A host could not be reached or a channel broke."""


class HostKeyError(TransportError):
    """A host key is unknown or has changed. `problem` says which (verdict, host, port, key
    type, fingerprint, known_hosts file) so a console can offer to accept an unknown key;
    None when the key was refused elsewhere (e.g. by a jump host's own checks)."""

    def __init__(self, message: str, problem: HostKeyProblem | None = None) -> None:
        super().__init__(message)
        self.problem = problem


@contextlib.contextmanager
def file_as_usage_error(prefix: str) -> Iterator[None]:
    """A file the operator named that cannot be opened or read is one clear line,
    `{prefix}: no such file` (or `is a directory`, or the system's reason)."""
    try:
        yield
    except FileNotFoundError:
        raise UsageError(f"{prefix}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{prefix}: is a directory") from None
    except OSError as exc:
        raise UsageError(f"{prefix}: {exc.strerror or exc}") from None
