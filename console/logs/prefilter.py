"""One compiled regex that answers "does this text contain any of these literals?" fast.

A flat alternation `lit1|lit2|...` makes `re` try every alternative at every position of the
line. The same literals folded into a trie (`K(?:V cache|ey)|o(?:ut of memory|...)`) try at
most one branch per distinct next character, so a line that contains none of them is rejected
several times faster. Better still, any substring of a required literal is itself required, so
each literal is cut to start at its rarest character (an upper-case letter rather than `e` or a
space): the regex engine then skips most positions of a line with its first-character check
and never enters the trie. Used as the first, cheap test before the catalogue's own patterns
and the severity heuristics; a false hit only costs the full check, a miss is always right.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_END = ""
Trie = dict[str, "Trie"]  # one level per character; _END marks a literal's end
_MIN_ANCHOR = 4
# Characters of log text from most to least common (English letter order, then the digits and
# punctuation of `key=value, path/x.py` text). Anything not listed counts as rare.
_COMMON = " etaoinsrhldcu.,:=_0123456789/-mpgfywb()'\"[]"
_RANK = {char: len(_COMMON) - index for index, char in enumerate(_COMMON)}


def anchor(literal: str) -> str:
    """The suffix of `literal` (at least 4 characters, or all of a shorter one) that starts
    at its rarest character: text containing `literal` always contains it."""
    last = max(1, len(literal) - _MIN_ANCHOR + 1)
    start = min(range(last), key=lambda i: (_RANK.get(literal[i], 0), i))
    return literal[start:]


def trie_pattern(literals: Iterable[str]) -> str:
    """A regex source matching exactly where any of `literals` occurs (case-sensitive)."""
    trie: Trie = {}
    for literal in set(literals):
        if not literal:
            raise ValueError("empty literal")
        node = trie
        for char in literal:
            node = node.setdefault(char, {})
        node[_END] = {}
    return _render(trie)


def _render(node: Trie) -> str:
    if _END in node:
        return ""  # a shorter literal already matched: longer ones add nothing
    branches = [re.escape(char) + _render(child) for char, child in sorted(node.items())]
    if len(branches) == 1:
        return branches[0]
    return "(?:" + "|".join(branches) + ")"


def compile_literals(literals: Iterable[str]) -> re.Pattern[str] | None:
    """A regex that finds text containing any of `literals` (and maybe, rarely, text that only
    contains a rare-character suffix of one: callers confirm a hit); None when there are
    none."""
    items = [anchor(literal) for literal in literals if literal]
    return re.compile(trie_pattern(items)) if items else None
