"""A typed schema of a launch command's flags, parsed from its own argparse `--help`.

We never ship one SGLang version's flag list as the truth: the schema comes from the host's
installed version (see discovery.py). Argparse's default HelpFormatter prints no defaults and
no types, so the schema knows names, aliases, choices, whether a value is taken (and how many),
the metavar and the help text. Numeric types come from a small hint table (types.py) that only
applies to flags the host's parser actually has.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Nargs = Literal["0", "1", "?", "+", "*"]
ValueType = Literal["switch", "str", "int", "float", "human_int"]

# An option line inside a help section: exactly two spaces, then a dash.
_OPTION_LINE = re.compile(r"^  (-{1,2}[A-Za-z0-9].*)$")
# A section header such as "options:" or "simulator options:" (column 0, ends with a colon).
_SECTION = re.compile(r"^(\S[^:]*):\s*$")
# `sglang serve --help` appends a second parser's help after this banner: stop there.
_FOREIGN_BANNER = re.compile(r"^---\s*Help for (?!Standard Language Model)", re.IGNORECASE)
_PART = re.compile(r"^(-{1,2}[A-Za-z0-9][A-Za-z0-9_.-]*)(?:[ =](.*))?$")
_CHOICES = re.compile(r"\{([^{}]*)\}")
_DEPRECATED = re.compile(r"\bdeprecated\b", re.IGNORECASE)


class FlagSpec(BaseModel):
    """One option of the launch command, as its `--help` describes it."""

    model_config = ConfigDict(frozen=True)

    name: str  # canonical long name without the leading dashes, e.g. "tp-size"
    aliases: tuple[str, ...] = ()  # other names without dashes, e.g. ("tensor-parallel-size",)
    nargs: Nargs = "1"
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    value_type: ValueType = "str"
    deprecated: bool = False
    help: str = ""

    @property
    def takes_value(self) -> bool:
        return self.nargs != "0"

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)


class FlagSchema(BaseModel):
    """All options of one launch command on one host and version."""

    model_config = ConfigDict(frozen=True)

    flags: dict[str, FlagSpec] = Field(default_factory=dict)
    version: str | None = None
    source: str = "help"

    def _by_any_name(self) -> dict[str, FlagSpec]:
        table: dict[str, FlagSpec] = {}
        for spec in self.flags.values():
            for name in spec.names:
                table[name] = spec
        return table

    def all_names(self) -> list[str]:
        return sorted(self._by_any_name())

    def get(self, name: str) -> FlagSpec | None:
        """The spec for an exact name or alias (no dashes)."""
        return self._by_any_name().get(name.lstrip("-"))

    def prefix_matches(self, name: str) -> list[str]:
        """Names argparse's abbreviation would consider for `name` (without dashes)."""
        bare = name.lstrip("-")
        return sorted(n for n in self._by_any_name() if n.startswith(bare) and n != bare)

    def resolve(self, name: str) -> list[FlagSpec]:
        """The flag(s) SGLang's argparse (allow_abbrev=True) reads `--name` as.

        An exact option string wins; otherwise every option string that `name` is a prefix
        of is a candidate (argparse `_get_option_tuples`): one action means the abbreviation
        resolves to it, several mean argparse refuses the option as ambiguous. Every
        candidate is returned, so a guard can refuse a name that could reach a guarded flag.
        """
        bare = name.lstrip("-")
        table = self._by_any_name()
        if bare in table:
            return [table[bare]]
        found: dict[str, FlagSpec] = {}
        for option, spec in table.items():
            if option.startswith(bare):
                found.setdefault(spec.name, spec)
        return [found[key] for key in sorted(found)]

    def with_hints(self, hints: dict[str, ValueType]) -> FlagSchema:
        """Apply numeric type hints to flags this schema has (never adds flags)."""
        updated = {
            key: spec.model_copy(update={"value_type": hints[key]})
            if key in hints and spec.takes_value and spec.choices is None
            else spec
            for key, spec in self.flags.items()
        }
        return self.model_copy(update={"flags": updated})


def parse_help(text: str, *, version: str | None = None) -> FlagSchema:
    """Parse argparse `--help` output (Python 3.8-3.13 formats) into a schema."""
    flags: dict[str, FlagSpec] = {}
    in_section = False
    current: FlagSpec | None = None
    help_lines: list[str] = []

    def finish() -> None:
        nonlocal current, help_lines
        if current is not None:
            help_text = " ".join(help_lines).strip()
            spec = current.model_copy(
                update={
                    "help": help_text,
                    "deprecated": bool(_DEPRECATED.search(help_text)),
                }
            )
            if spec.name not in ("help", "h"):
                flags.setdefault(spec.name, spec)
        current, help_lines = None, []

    for raw in text.splitlines():
        line = raw.rstrip()
        if _FOREIGN_BANNER.match(line):
            break
        if line.startswith("usage:"):
            finish()
            in_section = False
            continue
        header = _SECTION.match(line)
        if header and not line.startswith(" "):
            finish()
            in_section = True
            continue
        if not in_section:
            continue
        option = _OPTION_LINE.match(line)
        if option:
            finish()
            invocation, _, first_help = option.group(1).partition("  ")
            current = _parse_invocation(invocation.strip())
            help_lines = [first_help.strip()] if first_help.strip() else []
        elif current is not None and line.startswith("    ") and line.strip():
            help_lines.append(line.strip())
        elif not line.strip():
            continue
    finish()
    return FlagSchema(flags=flags, version=version)


def _split_invocation(invocation: str) -> list[str]:
    """Split `--a A, --b A` on the commas between options (not inside `{a,b}`)."""
    parts: list[str] = []
    depth = 0
    start = 0
    for index, char in enumerate(invocation):
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
        elif char == "," and depth == 0 and invocation[index + 1 : index + 3].startswith(" -"):
            parts.append(invocation[start:index].strip())
            start = index + 1
    parts.append(invocation[start:].strip())
    return [p for p in parts if p]


def _parse_invocation(invocation: str) -> FlagSpec | None:
    names: list[str] = []
    arg_text: str | None = None
    for part in _split_invocation(invocation):
        match = _PART.match(part)
        if not match:
            continue
        names.append(match.group(1))
        if match.group(2):
            arg_text = match.group(2).strip()
    long_names = [n[2:] for n in names if n.startswith("--")]
    if not long_names:
        return None
    # BooleanOptionalAction prints `--x, --no-x`: keep --x canonical, --no-x as an alias.
    canonical = next((n for n in long_names if not n.startswith("no-")), long_names[0])
    aliases = tuple(n for n in long_names if n != canonical)
    nargs, metavar, choices = _parse_arg_text(arg_text)
    return FlagSpec(
        name=canonical,
        aliases=aliases,
        nargs=nargs,
        metavar=metavar,
        choices=choices,
        value_type="switch" if nargs == "0" else "str",
    )


def _parse_arg_text(arg: str | None) -> tuple[Nargs, str | None, tuple[str, ...] | None]:
    if not arg:
        return "0", None, None
    found = _CHOICES.search(arg)
    choices = tuple(c for c in found.group(1).split(",") if c) if found else None
    metavar = None if found else arg.split(" ", 1)[0].strip("[]")
    if "..." in arg:
        nargs: Nargs = "*" if arg.startswith("[") else "+"
    elif arg.startswith("[") and arg.endswith("]"):
        nargs = "?"
    else:
        nargs = "1"
    return nargs, metavar, choices


def merge_schemas(schemas: Iterable[FlagSchema]) -> FlagSchema:
    """Union of several help outputs (first one wins on conflicts)."""
    merged: dict[str, FlagSpec] = {}
    version = None
    for schema in schemas:
        version = version or schema.version
        for key, spec in schema.flags.items():
            merged.setdefault(key, spec)
    return FlagSchema(flags=merged, version=version)
