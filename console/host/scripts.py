"""Shell snippets shared by the transports, each a constant script taking argv as "$@",
and the one fixed bootstrap every SSH exec request carries (`command_line`).

The scripts never contain user data: values travel as positional arguments, and over SSH as
base64 words decoded on the host, so nothing a user types is ever parsed by any shell.
"""

from __future__ import annotations

import base64
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

# Installs stdin as "$2" (a content-addressed program in directory "$1") unless a copy with
# sha256 "$3" is already there. Directory 0700 (chmod fails unless it is ours), file 0600,
# written to a temp name, checked against the hash, then renamed: a reader never sees a
# partial or foreign file. Prints "ok" (already there, hash verified) or "installed".
INSTALL_PROGRAM = (
    'umask 077; mkdir -p "$1" && chmod 700 "$1" || exit 1; '
    'if [ "$(sha256sum <"$2" 2>/dev/null)" = "$3  -" ]; then echo ok; exit 0; fi; '
    't="$2.plateau-tmp.$$"; '
    'if cat >"$t" && [ "$(sha256sum <"$t")" = "$3  -" ] && chmod 600 "$t" && mv -f "$t" "$2"; '
    'then echo installed; else rm -f "$t"; exit 1; fi'
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


# sshd hands an exec request's text to the user's LOGIN shell (`$SHELL -c TEXT`), and login
# shells disagree about quoting: fish treats \' and \\ inside '...' as escapes, tcsh expands
# `!` and refuses newlines inside quotes, zsh expands a word starting with `=`. `shlex.join` is
# right for POSIX sh only. So the text sent is always this fixed program, single-quoted, with no
# backslash, `!`, newline or quote inside (identical under bash, dash, zsh, fish and tcsh),
# followed by one word per argument: "x" + standard base64 (letters, digits, `+/=`, never
# empty, never starting with `=`), which no shell expands. The program decodes each word and
# execs the argv: the arguments themselves are never parsed by any shell.
# Host requirements: a POSIX `sh` and `base64 -d` (coreutils or busybox) in the login PATH.
BOOTSTRAP = (
    'for a in "$@"; do shift; x=$(printf %s "${a#x}" | base64 -d && echo .) || exit 125; '
    'set -- "$@" "${x%.}"; done; exec "$@"'
)
# `exec` (a builtin of all five login shells) replaces the login shell, so no copy of this
# text with the encoded argv stays in the host's process list while a command runs.
# Login scripts may print (a motd, `echo` in .bashrc, a terminal title set without a newline)
# before the command runs, on the same stdout: the login shell echoes OUTPUT_MARK right before
# the bootstrap, and everything up to it is dropped, so no command's output is misread.
OUTPUT_MARK = "plateau-output-begins-7c1f"
BOOTSTRAP_PREFIX = f"echo {OUTPUT_MARK}; exec sh -c '{BOOTSTRAP}' sh"


def after_mark(stdout: str) -> str:
    """A command's own stdout: what follows the OUTPUT_MARK line (all of it without one)."""
    at = stdout.find(OUTPUT_MARK)
    if at < 0:
        return stdout
    end = stdout.find("\n", at)
    return "" if end < 0 else stdout[end + 1:]


def after_mark_bytes(stdout: bytes) -> bytes:
    at = stdout.find(OUTPUT_MARK.encode())
    if at < 0:
        return stdout
    end = stdout.find(b"\n", at)
    return b"" if end < 0 else stdout[end + 1:]
BOOTSTRAP_NEEDS = (
    "Plateau sends every command through a fixed `sh -c` bootstrap (whatever the login shell) "
    "and needs a POSIX `sh` and `base64` (coreutils) on the host's PATH"
)

# Run through the bootstrap once per connection: proves it works and reports $HOME, the
# directory `~` means on the host (never the client's).
PROBE = 'printf "plateau-home:%s\\n" "$HOME"'
_PROBE_PREFIX = "plateau-home:"


def parse_probe(stdout: str) -> str | None:
    """The home directory from PROBE's output (login scripts may print before it, even on the
    same line), or None."""
    for line in reversed(stdout.splitlines()):
        at = line.rfind(_PROBE_PREFIX)
        if at >= 0:
            home = line[at + len(_PROBE_PREFIX):].rstrip("/") or "/"
            return home if home.startswith("/") else None
    return None


def resolve_home(path: str, home: str) -> str:
    """`~` and `~/...` resolved against the host's home; other paths unchanged (`~user` is
    refused by the config, so it never gets here)."""
    if path == "~":
        return home
    if path.startswith("~/"):
        return home.rstrip("/") + path[1:]
    return path

# Linux caps one argv string at MAX_ARG_STRLEN (32 pages = 128 KiB), and the whole exec text is
# ONE argument of the login shell (`$SHELL -c TEXT`); base64 grows data by 4/3. Past this the
# host answers "Connection reset by peer" or "Argument list too long", so refuse it here.
MAX_COMMAND_BYTES = 120 * 1024


class CommandTooLong(ValueError):
    """The encoded command would not fit in one exec request on Linux."""


def command_line(argv: Sequence[str]) -> str:
    """The single command string an SSH exec request carries: the fixed bootstrap plus one
    base64 word per argument (see BOOTSTRAP)."""
    if not argv:
        raise ValueError("empty command")
    if any("\x00" in arg for arg in argv):
        raise ValueError("command arguments cannot contain NUL bytes")
    words = ["x" + base64.b64encode(arg.encode("utf-8", "surrogateescape")).decode("ascii")
             for arg in argv]
    text = " ".join([BOOTSTRAP_PREFIX, *words])
    if len(text) > MAX_COMMAND_BYTES:
        raise CommandTooLong(
            f"command too long for one remote exec ({len(text) // 1024} KiB encoded, limit "
            f"{MAX_COMMAND_BYTES // 1024} KiB): {display(argv)[:120]}..."
        )
    return text


def display(argv: Sequence[str]) -> str:
    """How an argv is shown to the operator (POSIX quoting; what runs is exactly `argv`)."""
    return shlex.join(argv)
