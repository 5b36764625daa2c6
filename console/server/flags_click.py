"""A flag schema from a click (or typer) program's `--help`, e.g. `transformers serve --help`.

Click's layout differs from argparse's: a boolean is `--x / --no-x` (both spellings are real
options, so both become flags), a value's metavar names its type (`INTEGER`, `FLOAT`, `TEXT`),
choices are `[a|b|c]`, and a long invocation pushes its help to the next line. The parsing is
tested on the real help text in tests/data/engines/transformers-serve/serve-help.txt.
"""

from __future__ import annotations

import re

from console.server.flags import FlagSchema, FlagSpec, ValueType

_OPTION_LINE = re.compile(r"^  (-{1,2}[A-Za-z0-9][^ ].*)$")
_CHOICES = re.compile(r"^\[([^\]]+)\]$")
_TYPES: dict[str, ValueType] = {"INTEGER": "int", "FLOAT": "float", "TEXT": "str",
                                "PATH": "str", "FILENAME": "str"}


def _long_name(names: str) -> str | None:
    """`-q, --quiet` -> quiet; a short-only option has no name we can write in a profile."""
    longs = [part.strip()[2:] for part in names.split(",") if part.strip().startswith("--")]
    return longs[0] if longs else None


def _specs(invocation: str) -> list[FlagSpec]:
    """One option line's invocation -> its flags (two for `--x / --no-x`)."""
    if " / " in invocation:
        names = [_long_name(half) for half in invocation.split(" / ")]
        return [FlagSpec(name=n, nargs="0", value_type="switch") for n in names if n]
    spelled, _, metavar = invocation.partition(" ")
    name = _long_name(spelled)
    if name is None or name == "help":
        return []
    metavar = metavar.strip()
    if not metavar:
        return [FlagSpec(name=name, nargs="0", value_type="switch")]
    choices = _CHOICES.match(metavar)
    if choices:
        return [FlagSpec(name=name, metavar=metavar,
                         choices=tuple(c.strip() for c in choices.group(1).split("|")))]
    return [FlagSpec(name=name, metavar=metavar, value_type=_TYPES.get(metavar, "str"))]


def _split_option(text: str) -> tuple[str, str]:
    """An option line -> (invocation, the help on the same line): two spaces part them."""
    parts = re.split(r"\s{2,}", text, maxsplit=1)
    return parts[0].strip(), (parts[1] if len(parts) > 1 else "")


def parse_click_help(text: str, *, version: str | None = None) -> FlagSchema:
    """Every option in a click `--help` text (all sections), with its help text."""
    flags: dict[str, FlagSpec] = {}
    current: list[FlagSpec] = []
    help_parts: list[str] = []

    def finish() -> None:
        words = " ".join(help_parts).strip()
        for spec in current:
            flags.setdefault(spec.name, spec.model_copy(update={"help": words}))

    for raw in text.splitlines():
        line = raw.rstrip()
        option = _OPTION_LINE.match(line)
        if option:
            finish()
            invocation, first = _split_option(option.group(1))
            current = _specs(invocation)
            help_parts = [first.strip()] if first.strip() else []
        elif current and line.startswith("    ") and line.strip():
            help_parts.append(line.strip())
        elif line and not line.startswith(" "):
            finish()
            current, help_parts = [], []
    finish()
    return FlagSchema(flags=flags, version=version)

