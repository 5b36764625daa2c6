"""The catalogue of known SGLang messages: loading, validation and fast matching.

The data lives in catalogue.toml (package data). Matching is two-stage: one compiled regex of
the literal substrings (every entry names or implies at least one; see prefilter.py) rejects
the vast majority of lines with a single `search`; only lines that contain a literal run the
entries' regexes.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from console.errors import ConfigError
from console.logs.models import CatalogueEntry, Severity
from console.logs.prefilter import compile_literals

_MIN_LITERAL = 4
_REQUIRED = ("id", "pattern", "severity", "explanation", "action")
_OPTIONAL = ("title", "literals", "multiline", "versions", "examples")
_ID = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")


class CatalogueError(ConfigError):
    """catalogue.toml is malformed; the message names the file and entry."""


@dataclass(frozen=True, slots=True)
class CatalogueMatch:
    entry: CatalogueEntry
    span: tuple[int, int]


class Catalogue:
    """Known messages, matched against a log message (the line without its prefix)."""

    def __init__(self, entries: Sequence[CatalogueEntry], examples: Mapping[str, tuple[str, ...]]):
        self.entries: tuple[CatalogueEntry, ...] = tuple(entries)
        self.examples = dict(examples)
        self.by_id = {e.id: e for e in self.entries}
        self._compiled = [(e, re.compile(e.pattern)) for e in self.entries]
        # literal -> indexes of entries that need it; ordered by entry position so the first
        # listed entry wins when several match (more specific entries are listed first).
        by_literal: dict[str, list[int]] = {}
        for index, entry in enumerate(self.entries):
            for literal in entry.literals:
                by_literal.setdefault(literal, []).append(index)
        self._by_literal = {k: tuple(v) for k, v in by_literal.items()}
        self.literals: tuple[str, ...] = tuple(by_literal)
        """Every entry's required substrings: a message containing none matches no entry."""
        self._prefilter = compile_literals(self.literals)

    def __len__(self) -> int:
        return len(self.entries)

    def match(self, message: str) -> CatalogueMatch | None:
        prefilter = self._prefilter
        if prefilter is None or prefilter.search(message) is None:
            return None
        # A line may contain several literals; gather every candidate in catalogue order.
        candidates: set[int] = set()
        for literal, indexes in self._by_literal.items():
            if literal in message:
                candidates.update(indexes)
        for index in sorted(candidates):
            entry, regex = self._compiled[index]
            found = regex.search(message)
            if found is not None:
                return CatalogueMatch(entry, found.span())
        return None

    def match_id(self, message: str) -> str | None:
        found = self.match(message)
        return None if found is None else found.entry.id


def load_catalogue(path: Path | str | None = None) -> Catalogue:
    """Load and validate a catalogue; the packaged one when `path` is None."""
    if path is None:
        text = resources.files("console.logs").joinpath("catalogue.toml").read_text("utf-8")
        origin = "console/logs/catalogue.toml"
    else:
        origin = str(path)
        try:
            text = Path(path).read_text("utf-8")
        except OSError as exc:
            raise CatalogueError(f"{origin}: cannot read: {exc.strerror}") from exc
    return parse_catalogue(text, origin=origin)


_DEFAULT: Catalogue | None = None


def default_catalogue() -> Catalogue:
    """The packaged catalogue, loaded once."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = load_catalogue()
    return _DEFAULT


def parse_catalogue(text: str, *, origin: str = "<catalogue>") -> Catalogue:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogueError(f"{origin}: {exc}") from exc
    raw_entries = data.get("message")
    if not isinstance(raw_entries, list) or not raw_entries:
        raise CatalogueError(f"{origin}: expected one or more [[message]] tables")
    entries: list[CatalogueEntry] = []
    examples: dict[str, tuple[str, ...]] = {}
    seen: set[str] = set()
    for position, raw in enumerate(raw_entries, start=1):
        entry, entry_examples = _parse_entry(raw, origin=origin, position=position)
        if entry.id in seen:
            raise CatalogueError(f"{origin}: [[message]] #{position}: duplicate id {entry.id!r}")
        seen.add(entry.id)
        entries.append(entry)
        examples[entry.id] = entry_examples
    return Catalogue(entries, examples)


def _parse_entry(
    raw: Any, *, origin: str, position: int
) -> tuple[CatalogueEntry, tuple[str, ...]]:
    where = f"{origin}: [[message]] #{position}"
    if not isinstance(raw, dict):
        raise CatalogueError(f"{where}: expected a table")
    if isinstance(raw.get("id"), str):
        where = f"{where} ({raw['id']})"
    missing = [key for key in _REQUIRED if key not in raw]
    if missing:
        raise CatalogueError(f"{where}: missing key(s) {', '.join(missing)}")
    unknown = sorted(set(raw) - set(_REQUIRED) - set(_OPTIONAL))
    if unknown:
        raise CatalogueError(f"{where}: unknown key(s) {', '.join(unknown)}")
    for key in ("id", "pattern", "severity", "explanation", "action", "title", "versions"):
        if key in raw and not (isinstance(raw[key], str) and raw[key].strip()):
            raise CatalogueError(f"{where}: {key} must be a non-empty string")
    if not _ID.match(raw["id"]):
        raise CatalogueError(f"{where}: id {raw['id']!r} must be lowercase [a-z0-9_.-]")
    try:
        regex = re.compile(raw["pattern"])
    except re.error as exc:
        raise CatalogueError(f"{where}: pattern does not compile: {exc}") from exc
    try:
        severity = Severity.parse(raw["severity"])
    except ValueError as exc:
        raise CatalogueError(f"{where}: {exc}") from exc
    multiline = raw.get("multiline", False)
    if not isinstance(multiline, bool):
        raise CatalogueError(f"{where}: multiline must be true or false")
    literals = _string_list(raw.get("literals"), where=where, key="literals")
    if not literals:
        derived = derive_literal(raw["pattern"])
        if derived is None:
            raise CatalogueError(
                f"{where}: cannot derive a literal substring of >= {_MIN_LITERAL} characters "
                "from the pattern; add literals = [\"...\"] (text every match contains)"
            )
        literals = (derived,)
    examples = _string_list(raw.get("examples"), where=where, key="examples")
    for example in examples:
        if regex.search(example) is None:
            raise CatalogueError(f"{where}: pattern does not match its example {example!r}")
        if not any(literal in example for literal in literals):
            raise CatalogueError(f"{where}: no literal occurs in the example {example!r}")
    entry = CatalogueEntry(
        id=raw["id"],
        pattern=raw["pattern"],
        severity=severity,
        explanation=raw["explanation"].strip(),
        action=raw["action"].strip(),
        title=raw.get("title", "").strip(),
        literals=literals,
        multiline=multiline,
        versions=raw.get("versions", ""),
    )
    return entry, examples


def _string_list(value: Any, *, where: str, key: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise CatalogueError(f"{where}: {key} must be a list of non-empty strings")
    return tuple(value)


def derive_literal(pattern: str) -> str | None:
    """The longest run of literal characters at the top level of `pattern`, if it is long
    enough and the pattern has no top-level alternation or case-insensitive flag (either would
    make the literal not required)."""
    from re import _parser as sre_parse  # type: ignore[attr-defined]
    from re._constants import LITERAL  # type: ignore[import-not-found]

    try:
        parsed = sre_parse.parse(pattern)
    except re.error:
        return None
    if parsed.state.flags & re.IGNORECASE:
        return None
    best = ""
    run: list[str] = []
    for op, arg in _top_level(parsed):
        if op is LITERAL:
            run.append(chr(arg))
            continue
        if str(op) == "BRANCH" and len(parsed) == 1:
            return None  # `a|b` at the top: no substring is required
        best = max(best, "".join(run), key=len)
        run = []
    best = max(best, "".join(run), key=len)
    return best if len(best) >= _MIN_LITERAL else None


def _top_level(parsed: Iterable[tuple[Any, Any]]) -> Iterable[tuple[Any, Any]]:
    yield from parsed
