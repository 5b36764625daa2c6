"""Errors the CLI turns into one clear line and a non-zero exit."""

from __future__ import annotations


class PlateauError(Exception):
    """An error meant for the operator: its message is the whole story."""

    exit_code = 1


class UsageError(PlateauError):
    """Bad input from the operator (arguments, config)."""

    exit_code = 2


class ConfigError(UsageError):
    """A config file is malformed; the message names file, key and line."""


class TransportError(PlateauError):
    """A host could not be reached or a channel broke."""


class HostKeyError(TransportError):
    """A host key is unknown or has changed."""
