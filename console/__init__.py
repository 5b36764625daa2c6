"""Plateau core: services that produce typed data, usable without a terminal."""

__version__ = "0.1.0"
