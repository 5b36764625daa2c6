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
    "tune": "tune",
    "layout": "layout",
    "diagnose": "diagnose",
    "report": "report",
    "export": "export",
    "server": "server",
    "record": "record",
    "exporter": "exporter",
    "replay": "replay",
    "config": "config_cmd",
}

Handler = Callable[[argparse.Namespace], "int | Coroutine[Any, Any, int]"]


def did_you_mean(word: str, candidates: Sequence[str]) -> str:
    """` (did you mean X?)` for the closest candidate, or ``."""
    import difflib

    bare = {c.lstrip("-"): c for c in candidates}
    close = difflib.get_close_matches(word.lstrip("-"), list(bare), n=1, cutoff=0.6)
    return f" (did you mean {bare[close[0]]}?)" if close else ""


class PlateauParser(argparse.ArgumentParser):
    """A bad value is one line, with where to read more, instead of argparse's usage block
    (18 lines for `sweep`) above the one line that matters; a word the (sub)command does not
    take is that one line too, with a did-you-mean (issue 26, item 9) and where the usage is:
    the README promises one line for an error (issue 41 found the usage block above it).
    """

    def error(self, message: str) -> Any:  # argparse's signature: NoReturn
        from console.text import sanitize

        # The message quotes the user's words: a newline or an escape in one stays visible
        # and the error stays one line.
        hint = f"`{self.prog} --help` lists the options"
        self.exit(2, f"{self.prog}: error: {sanitize(message)}; {hint}\n")

    def unrecognized(self, extras: Sequence[str]) -> Any:
        """Words this (sub)command does not take, each with its closest option."""
        options = [o for action in self._actions for o in action.option_strings]
        said = ", ".join(f"{w!r}{did_you_mean(w, options)}" for w in extras)
        self.error(f"unrecognized argument(s) {said}")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole CLI's parser; with `only`, just that subcommand's (imports one module)."""
    parser = PlateauParser(
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


# The console's options that take a value, so that `plateau --log FILE` reads FILE as theirs,
# not as a HOST.
_CONSOLE_VALUED = ("--log", "--bench")


def _first_word(argv: list[str]) -> int | None:
    """Index of the first positional word (`--config` takes a value), or None."""
    index = 0
    while index < len(argv):
        if argv[index] == "--config" or argv[index] in _CONSOLE_VALUED:
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
    """Route `plateau [HOST]` (and `plateau --log FILE`) to the `console` subcommand."""
    index = _first_word(argv)
    if index is None:
        if any(a in _HELP for a in argv):
            return argv
        if any(a in _CONSOLE_VALUED for a in argv):
            return _console_args(argv)
        return [*argv, "console"]
    if argv[index] in COMMANDS:
        return argv
    if any(a in _CONSOLE_VALUED for a in argv[:index]):
        return _console_args(argv)
    return [*argv[:index], "console", *argv[index:]]


def _console_args(argv: list[str]) -> list[str]:
    """`console` after the top-level options (`--config FILE`), before the console's own."""
    end = 0
    while end < len(argv) and argv[end] == "--config":
        end += 2
    return [*argv[:end], "console", *argv[end:]]


def _check_named_config(args: argparse.Namespace) -> None:
    """A `--demo` command uses the demo's own config, but a config file named with
    `--config` is still read and checked: a broken one fails naming file, key and line
    rather than being ignored without a word."""
    if getattr(args, "demo", False) and getattr(args, "config", None):
        from console.config import load_config

        load_config(args.config)


def _parse(parser: argparse.ArgumentParser, args_list: list[str]) -> argparse.Namespace:
    """Parse; words the subcommand does not take are its error (with its did-you-mean), not
    the top-level parser's."""
    args, extras = parser.parse_known_args(args_list)
    if extras:
        command = getattr(args, "command", None)
        sub = _subparser(parser, command) if command else None
        target = sub if isinstance(sub, PlateauParser) else parser
        assert isinstance(target, PlateauParser)
        target.unrecognized(extras)
    return args


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found = action.choices.get(name)
            return found if isinstance(found, argparse.ArgumentParser) else None
    return None


def _unknown_word(args_list: list[str]) -> str | None:
    """Why the word routed to `console` as a HOST is neither a command nor a host of the
    config, or None when it is a host (or there is no word)."""
    index = _first_word(args_list)
    if index is None or args_list[index] != "console" or index + 1 >= len(args_list):
        return None
    word = args_list[index + 1]
    if word.startswith("-"):
        return None
    explicit = args_list[args_list.index("--config") + 1] if "--config" in args_list[:index] \
        else None
    hosts: list[str] = []
    why = ""
    try:
        from console.config import load_config

        hosts = [h.name for h in load_config(explicit).config.hosts]
    except PlateauError as exc:
        why = f"; no host list: {sanitize_lines(str(exc)).splitlines()[0]}"
    if word in hosts:
        return None
    known = [c for c in COMMANDS if c != "console"]
    return (f"unknown command or host {word!r}{did_you_mean(word, known + hosts)}{why}; "
            "`plateau --help` lists the commands")


def main(argv: Sequence[str] | None = None) -> int:
    raw = list(sys.argv[1:] if argv is None else argv)
    args_list = _normalise_argv(raw)
    if args_list != raw:  # a word that is no command was taken for a HOST: is it one?
        unknown = _unknown_word(args_list)
        if unknown is not None:
            print(f"plateau: {unknown}", file=sys.stderr)
            return 2
    parser = build_parser(_command_of(args_list))
    try:
        args = _parse(parser, args_list)
    except SystemExit as exc:  # --help (0) or a usage error (2, already printed): a return
        return exc.code if isinstance(exc.code, int) else 2  # value, so callers in-process see it
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        _check_named_config(args)
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
