"""argparse value types that refuse what a command cannot honour.

Plain `type=int` / `type=float` let through `nan` (a timeout that never fires), negative
counts (`gpus --count -1` ran forever), zero workers, and run ids SQLite cannot hold
(OverflowError tracebacks). Each type here turns such a value into argparse's one-line usage
error (exit 2).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from console.config_models import SloSpec

SQLITE_MAX_INT = (1 << 63) - 1


def int_at_least(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """An int in [minimum, maximum]."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum}, got {text}")
        return value

    parse.__name__ = "int"  # argparse names the type in "invalid int value" messages
    return parse


def float_at_least(minimum: float, *, exclusive: bool = False) -> Callable[[str], float]:
    """A finite float >= minimum (> minimum when `exclusive`): never nan or inf."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
        if value < minimum or (exclusive and value == minimum):
            relation = "greater than" if exclusive else "at least"
            raise argparse.ArgumentTypeError(f"must be {relation} {minimum:g}, got {value:g}")
        return value

    parse.__name__ = "float"
    return parse


run_id = int_at_least(1, SQLITE_MAX_INT)
"""A stored run's id (SQLite INTEGER PRIMARY KEY: 1 .. 2**63-1)."""

positive_int = int_at_least(1)
count = int_at_least(0)
seconds = float_at_least(0.0, exclusive=True)
"""A duration or timeout: finite and > 0 (nan never times out; -1 fails at once)."""
seconds_or_zero = float_at_least(0.0)


def plain_text(text: str) -> str:
    """A name printed back to the operator: no control characters (a newline in a profile
    name could fake a line of output)."""
    if not text.isprintable():
        raise argparse.ArgumentTypeError(f"must not contain control characters: {text!r}")
    return text


def http_url(text: str) -> str:
    """An http(s) base URL with a host (`http://[::1` raised httpx.InvalidURL mid-sweep)."""
    import httpx  # only commands that take a URL pay for the import

    try:
        url = httpx.URL(text)
        port = url.port  # parses the port: 'http://h:99999' fails here, not mid-sweep
    except (httpx.InvalidURL, ValueError, TypeError) as exc:
        raise argparse.ArgumentTypeError(f"not a valid URL {text!r}: {exc}") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise argparse.ArgumentTypeError(f"expected http://HOST:PORT, got {text!r}")
    if port is not None and not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port out of range in {text!r}")
    return text


def command_words(text: str) -> str:
    """A command line split like a POSIX shell would (no shell runs it): the quotes must
    balance and at least one word must remain."""
    import shlex

    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"cannot split {text!r}: {exc}") from None
    if not words:
        raise argparse.ArgumentTypeError("the command is empty")
    return text


def slo(text: str) -> SloSpec:
    """`--slo ttft_p99_ms=500,itl_p99_ms=50,e2e_p99_ms=20000` (console/bench/slo.py)."""
    from console.bench.slo import SloSyntaxError, parse_slo

    try:
        return parse_slo(text)
    except SloSyntaxError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None

