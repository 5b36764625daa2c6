"""Secrets out of server snapshots before they are stored or shown.

SGLang 0.5.23's `/server_info` reports every resolved ServerArgs field verbatim, so
`api_key`, `admin_api_key` and `ssl_keyfile_password` arrive in clear text (in the top level
and in each `internal_states` entry), and `launch_command` carries `--api-key VALUE` (SGLang
only redacts watermark secrets there). History is a file on disk: none of that may reach it.
"""

from __future__ import annotations

import re
from typing import Any

from console.server.records import REDACTED, redact_argv

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
