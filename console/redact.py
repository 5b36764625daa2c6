"""Secrets out of what is stored or shown: server snapshots and launch command lines.

SGLang 0.5.23's `/server_info` reports every resolved ServerArgs field verbatim, so
`api_key`, `admin_api_key` and `ssl_keyfile_password` arrive in clear text (in the top level
and in each `internal_states` entry), and `launch_command` carries `--api-key VALUE` (SGLang
only redacts watermark secrets there). History is a file on disk: none of that may reach it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

REDACTED = "<redacted>"
# Whole words only: `--hf-token` is a secret, `--tokenizer-path` is not (redacting it made
# the shown command differ from what ran), and neither is a count of tokens
# (`--max-total-tokens`, transformers serve's `--cb-max-batch-tokens`).
_SECRET_FLAG = re.compile(
    r"^--(?:admin-)?api-key$|(?:^--|-)(?:token|secrets?|passwords?)(?:-|$)", re.IGNORECASE
)
_SECRET_KEY = re.compile(
    r"(?:^|_)(?:api_key|password|passwd|passphrase|secret|token|watermark_key(?:_b)?)$",
    re.IGNORECASE,
)
_COMMAND_KEYS = frozenset({"launch_command"})


def redact_server_info(value: Any) -> Any:
    """A deep copy of `value` with secret fields and secret command-line values replaced."""
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            if isinstance(key, str) and _SECRET_KEY.search(key) and item not in (None, ""):
                out[key] = REDACTED
            elif key in _COMMAND_KEYS and isinstance(item, str):
                out[key] = " ".join(redact_argv(item.split(" ")))
            elif key in _COMMAND_KEYS and isinstance(item, list):
                out[key] = redact_argv([str(x) for x in item])
            else:
                out[key] = redact_server_info(item)
        return out
    if isinstance(value, list):
        return [redact_server_info(item) for item in value]
    return value


def redact_argv(argv: Sequence[str]) -> list[str]:
    """Replace the values of secret-looking flags (`--api-key X`, `--api-key=X`)."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(REDACTED)
            hide_next = False
            continue
        name, eq, _value = arg.partition("=")
        if name.startswith("--") and _SECRET_FLAG.search(name):
            if eq:
                out.append(f"{name}={REDACTED}")
            else:
                out.append(arg)
                hide_next = True
            continue
        out.append(arg)
    return out


MAX_STRING = 2000
MAX_ITEMS = 200
MAX_KEYS = 1000  # SGLang 0.5.23 reports ~300 ServerArgs fields: all kept
MAX_DEPTH = 8


def bounded(value: Any, depth: int = 0) -> Any:
    """`value` (parsed JSON from the host) cut to a size worth storing with every run: long
    strings, long lists and big or deep objects are shortened and say so. A server that
    returns a 10 MB /server_info must not add 10 MB to every run in the history."""
    if isinstance(value, str):
        return value if len(value) <= MAX_STRING else (
            f"{value[:MAX_STRING]}… [{len(value) - MAX_STRING} more characters]")
    if depth >= MAX_DEPTH and isinstance(value, dict | list):
        return "<nested too deep>"
    if isinstance(value, list):
        items = [bounded(item, depth + 1) for item in value[:MAX_ITEMS]]
        if len(value) > MAX_ITEMS:
            items.append(f"… [{len(value) - MAX_ITEMS} more items]")
        return items
    if isinstance(value, dict):
        out = {key: bounded(item, depth + 1)
               for key, item in list(value.items())[:MAX_KEYS]}
        if len(value) > MAX_KEYS:
            out["…"] = f"{len(value) - MAX_KEYS} more keys"
        return out
    return value


def stored_server_info(value: Any) -> Any:
    """What is kept of a /server_info: secrets out, size bounded."""
    return bounded(redact_server_info(value))
