"""The samples of a Prometheus text exposition (format 0.0.4, what SGLang's prometheus-client
serves), read as prometheus-client's own text parser reads them, for the series a `keep` test
accepts.

Why not prometheus-client's parser: it walks every line a character at a time in Python. 64
hosts scraped every few seconds made it most of a scrape's cost (2.6 ms for the simulator's
page, which is mostly buckets we drop anyway). This reader skips a line it does not keep by its
name alone and reads a kept one with two regular expressions. Where the two could differ, it
follows prometheus-client (tests/test_metrics_exposition.py compares them sample by sample on
real SGLang pages):
- a sample of a family typed `counter` whose name lacks `_total` gets it (OpenMetrics naming);
- a label value's escapes are `\\\\`, `\\"` and `\\n`; any other backslash stays as written;
- a value is Python's float() of the token, `_` refused; a trailing timestamp is ignored.
A kept line this reader cannot read raises ValueError naming its line number.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Sample:
    name: str
    labels: dict[str, str]
    value: float


# name, then optional {labels} (quoted values may hold any character), then value [timestamp]
_LINE = re.compile(
    r'[ \t]*([a-zA-Z_:][a-zA-Z0-9_:]*)[ \t]*'
    r'(?:\{((?:[^"}]|"(?:[^"\\]|\\.)*")*)\})?'
    r'[ \t]+(\S+)(?:[ \t]+\S+)*[ \t]*'
)
_LABEL = re.compile(r'[ \t]*([a-zA-Z_][a-zA-Z0-9_]*)[ \t]*=[ \t]*"((?:[^"\\]|\\.)*)"[ \t]*(,|$)')
_PAIR = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)[ \t]*=[ \t]*"((?:[^"\\]|\\.)*)"')
_LABELS = re.compile(r'(?:[ \t]*[a-zA-Z_][a-zA-Z0-9_]*[ \t]*=[ \t]*"(?:[^"\\]|\\.)*"[ \t]*,)*'
                     r'(?:[ \t]*[a-zA-Z_][a-zA-Z0-9_]*[ \t]*=[ \t]*"(?:[^"\\]|\\.)*"[ \t]*)?')
_ESCAPE = re.compile(r'\\[\\n"]')
_UNESCAPED = {"\\\\": "\\", "\\n": "\n", '\\"': '"'}
_NAME = re.compile(r"[^{\s]+")


def samples(text: str, keep: Callable[[str], bool]) -> Iterator[Sample]:
    """Each sample whose name (as prometheus-client names it) `keep` accepts."""
    counters: set[str] = set()
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("#"):
            if line.rstrip().endswith("counter"):
                words = line.split(None, 3)
                if len(words) == 4 and words[1] == "TYPE" and words[3].strip() == "counter":
                    counters.add(words[2])
            continue
        head = _NAME.match(line, 0 if line[:1] not in (" ", "\t") else len(line) - len(
            line.lstrip(" \t")))
        if head is None:
            continue  # a blank line
        name = head.group()
        if name in counters and not name.endswith("_total"):
            name += "_total"
        if keep(name):
            yield _sample(line, number, name)


def _sample(line: str, number: int, name: str) -> Sample:
    found = _LINE.fullmatch(line)
    if found is None:
        raise ValueError(f"/metrics line {number}: not a sample: {line[:120]!r}")
    labels = _labels(found.group(2), number) if found.group(2) else {}
    return Sample(name, labels, _value(found.group(3), number))


def _labels(text: str, number: int) -> dict[str, str]:
    if _LABELS.fullmatch(text) is not None:  # well formed (all of SGLang's): one C pass
        return {name: (_ESCAPE.sub(lambda m: _UNESCAPED[m.group()], value) if "\\" in value
                       else value) for name, value in _PAIR.findall(text)}
    labels: dict[str, str] = {}
    position = 0
    while position < len(text):
        pair = _LABEL.match(text, position)
        if pair is None:
            if not text[position:].strip(" \t"):
                break  # a trailing comma's whitespace
            raise ValueError(f"/metrics line {number}: bad labels: {text[:120]!r}")
        value = pair.group(2)
        labels[pair.group(1)] = (_ESCAPE.sub(lambda m: _UNESCAPED[m.group()], value)
                                 if "\\" in value else value)
        position = pair.end()
        if not pair.group(3):
            break
    return labels


def _value(token: str, number: int) -> float:
    if "_" in token:
        raise ValueError(f"/metrics line {number}: bad value {token[:40]!r}")
    try:
        return float(token)  # a huge integer reads as inf (prometheus-client's int: the same)
    except ValueError:
        raise ValueError(f"/metrics line {number}: bad value {token[:40]!r}") from None
