"""Shell snippets shared by the transports, each a constant script taking argv as "$@".

The scripts themselves never contain user data: values travel as positional arguments,
quoted with `shlex.join`, so nothing a user types is ever parsed as shell.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SIGNAL = re.compile(r"^[A-Z0-9]+$")

# Runs "$@" in its own process group; when our side of the channel goes away (stdin EOF),
# the whole group is terminated. The child's exit status is passed through.
# (A background list's stdin is /dev/null in sh, hence the explicit fd 3 for the channel.)
WATCHDOG = (
    'exec 3<&0; setsid "$@" </dev/null 3<&- & p=$!; '
    "{ cat <&3 >/dev/null; kill -TERM -$p; sleep 2; kill -KILL -$p; } >/dev/null 2>&1 & w=$!; "
    "exec 3<&-; wait $p; rc=$?; kill $w 2>/dev/null; exit $rc"
)

# Starts "$@" (after the log path) in a new session, detached from us; prints its PID,
# which is also its PGID and SID.
DETACH = (
    'log=$1; shift; mkdir -p "$(dirname "$log")" || exit 1; '
    'setsid nohup "$@" >>"$log" 2>&1 </dev/null & echo $!'
)

# Exit 0 iff the PID exists and is not a zombie (an unreaped child still answers `kill -0`).
IS_ALIVE = (
    's=$(cat "/proc/$1/stat" 2>/dev/null) || exit 1; '
    'case "${s##*) }" in Z*|X*) exit 1;; esac; exit 0'
)

# Writes stdin to "$1" atomically (temp file + rename) with mode "$2".
WRITE_FILE = (
    'd=$(dirname "$1"); mkdir -p "$d" || exit 1; t="$1.plateau-tmp.$$"; '
    'cat >"$t" && chmod "$2" "$t" && mv -f "$t" "$1" || { rm -f "$t"; exit 1; }'
)


def sh(script: str, *args: str) -> list[str]:
    """argv for `sh -c SCRIPT sh ARGS...`."""
    return ["sh", "-c", script, "sh", *args]


def with_env(argv: Sequence[str], env: Mapping[str, str] | None) -> list[str]:
    """Prefix `env NAME=VALUE` items; names are validated, values are plain data."""
    if not env:
        return list(argv)
    prefix = ["env"]
    for name, value in env.items():
        if not _ENV_NAME.match(name):
            raise ValueError(f"invalid environment variable name: {name!r}")
        prefix.append(f"{name}={value}")
    return [*prefix, *argv]


def with_cwd(argv: Sequence[str], cwd: str | None) -> list[str]:
    if cwd is None:
        return list(argv)
    return sh('cd "$1" || exit 1; shift; exec "$@"', cwd, *argv)


def signal_argv(pgid: int, signal_name: str) -> list[str]:
    name = signal_name.upper().removeprefix("SIG")
    if not _SIGNAL.match(name):
        raise ValueError(f"invalid signal name: {signal_name!r}")
    if pgid <= 1:
        raise ValueError(f"refusing to signal process group {pgid}")
    return ["kill", f"-{name}", "--", f"-{pgid}"]


def command_line(argv: Sequence[str]) -> str:
    """The single command string an SSH exec request carries."""
    if not argv:
        raise ValueError("empty command")
    if any("\x00" in arg for arg in argv):
        raise ValueError("command arguments cannot contain NUL bytes")
    return shlex.join(argv)
