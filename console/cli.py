"""The `plateau` command: dispatches to one module per subcommand under console/commands/."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from console import __version__
from console.errors import PlateauError
from console.text import sanitize_lines

# Subcommand name -> its module under console.commands, whose `register(sub)` adds the parser
# (and names the handler). `plateau [HOST]` (no subcommand) is "console". Imported on demand:
# a run imports only its own command's module (and what that needs), so `plateau logscan`
# does not pay for Textual, asyncssh or the load generator, nor `plateau demo` for the sweep
# and A/B machinery.
COMMANDS: dict[str, str] = {
    "console": "console_cmd",
    "demo": "demo",
    "sim": "sim",
    "snapshot": "snapshot",
    "gpus": "gpus",
    "logscan": "logscan",
    "sweep": "sweep",
    "history": "history",
    "compare": "compare",
    "ab": "ab",
    "diagnose": "diagnose",
    "server": "server",
    "record": "record",
    "replay": "replay",
    "config": "config_cmd",
}

Handler = Callable[[argparse.Namespace], "int | Coroutine[Any, Any, int]"]


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole CLI's parser; with `only`, just that subcommand's (imports one module)."""
    parser = argparse.ArgumentParser(
        prog="plateau",
        description="Operator console for LLM inference hosts (SGLang).",
        epilog="With no subcommand, `plateau [HOST]` opens the console on HOST "
        "(a host name from the config, or the first host configured).",
    )
    parser.add_argument("--version", action="version", version=f"plateau {__version__}")
    parser.add_argument(
        "--config", metavar="FILE", help="config file (else $PLATEAU_CONFIG, else the XDG config)"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in COMMANDS.items():
        if only is None or name == only:
            importlib.import_module(f"console.commands.{module}").register(sub)
    return parser


_HELP = ("-h", "--help", "--version")


def _first_word(argv: list[str]) -> int | None:
    """Index of the first positional word (`--config` takes a value), or None."""
    index = 0
    while index < len(argv):
        if argv[index] == "--config":
            index += 2
        elif argv[index].startswith("-"):
            index += 1
        else:
            return index
    return None


def _command_of(argv: list[str]) -> str | None:
    """The subcommand a normalised argv runs, or None (help, version, an unknown word)."""
    index = _first_word(argv)
    if index is None or any(a in _HELP for a in argv[:index]):
        return None
    return argv[index] if argv[index] in COMMANDS else None


def _normalise_argv(argv: list[str]) -> list[str]:
    """Route `plateau [HOST]` to the `console` subcommand."""
    index = _first_word(argv)
    if index is None:
        return argv if any(a in _HELP for a in argv) else [*argv, "console"]
    if argv[index] in COMMANDS:
        return argv
    return [*argv[:index], "console", *argv[index:]]


def main(argv: Sequence[str] | None = None) -> int:
    args_list = _normalise_argv(list(sys.argv[1:] if argv is None else argv))
    parser = build_parser(_command_of(args_list))
    try:
        args = parser.parse_args(args_list)
    except SystemExit as exc:  # --help (0) or a usage error (2, already printed): a return
        return exc.code if isinstance(exc.code, int) else 2  # value, so callers in-process see it
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        result = handler(args)
        if isinstance(result, Coroutine):
            import asyncio  # here: the synchronous commands (logscan) do not pay for it

            code = asyncio.run(result)
        else:
            code = result
        return int(code or 0)
    except PlateauError as exc:
        # host text inside (stderr, records, log lines) never reaches the terminal raw
        print(f"plateau: {sanitize_lines(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print("plateau: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
