"""The API key into SGLang's `--config FILE.yaml`, merged with a profile's own config file.

SGLang reads one `--config` (srt/server_args.py, ConfigArgumentMerger: the first `--config`
in argv is merged, any other is an ordinary unknown value), so a second file carrying the
key would be ignored and the server would run unauthenticated. Plateau writes one file: the
profile's own lines with the key added, 0600 in the run dir, and passes only that one.
"""

from __future__ import annotations

import json
import re

from console.errors import UsageError

_KEY_LINE = re.compile(r"^(?:api[-_]key|['\"]api[-_]key['\"])\s*:")
_TOP_LEVEL = re.compile(r"^[^\s#]")


def config_path(argv: list[str]) -> tuple[int, str] | None:
    """(index, path) of the `--config` in a server argv (`--config X` or `--config=X`)."""
    for index, arg in enumerate(argv):
        if arg == "--config" and index + 1 < len(argv):
            return index, argv[index + 1]
        if arg.startswith("--config="):
            return index, arg.partition("=")[2]
    return None


def with_config(argv: list[str], path: str) -> list[str]:
    """`argv` with its `--config` replaced by `path` (added when it has none)."""
    found = config_path(argv)
    if found is None:
        return [*argv, "--config", path]
    index, _old = found
    width = 1 if argv[index].startswith("--config=") else 2
    return [*argv[:index], "--config", path, *argv[index + width:]]


def merge_key(text: str, key: str, source: str) -> str:
    """The profile's config `text` with `api-key` set to `key` (an `api-key` it had is
    replaced). Only a block mapping of options can be merged line by line; anything else (a
    flow mapping, several documents) is refused with the file's name rather than guessed."""
    lines = text.splitlines()
    body = [line for line in lines if line.strip() and not line.lstrip().startswith("#")]
    if body and body[0].lstrip().startswith(("{", "[")):
        raise UsageError(f"{source}: a flow-style YAML config cannot be merged with the API key; "
                         "write it as `option: value` lines")
    if any(line.startswith(("---", "...")) for line in body[1:]):
        raise UsageError(f"{source}: several YAML documents; SGLang's --config takes one")
    kept: list[str] = []
    dropping = False
    for line in lines:
        if _KEY_LINE.match(line):
            dropping = True  # and the key's continuation lines, if it spanned several
            continue
        if dropping and not _TOP_LEVEL.match(line) and line.strip():
            continue
        dropping = False
        kept.append(line)
    # JSON strings are YAML strings: any character of the key is quoted safely.
    return "\n".join([*kept, f"api-key: {json.dumps(key)}"]) + "\n"
