"""The simulated tokenizer: a fixed word vocabulary and deterministic output token streams.

Output text is built from whole words so the client-side tokenizer built by
tests/support/tokenizer.py (a WordLevel vocabulary over the same words) retokenizes it exactly.
"""

from __future__ import annotations

import json
import random
from functools import cache

_ONSETS = ("", "b", "c", "d", "f", "g", "h", "l", "m", "n", "p", "r", "s", "t", "v", "w")
_NUCLEI = ("a", "e", "i", "o", "u", "ai", "ou", "ea")
_CODAS = ("", "n", "r", "s", "t", "l", "nd", "st")
VOCAB_SIZE = 1024
EOS_TOKEN_ID = 2
TABLE_SIZE = 8192


@cache
def vocab() -> tuple[str, ...]:
    """Deterministic list of distinct lowercase pseudo-words (ids 0..VOCAB_SIZE-1)."""
    words: list[str] = ["<unk>", "<s>", "</s>"]
    seen = set(words)
    for o1 in _ONSETS:
        for n1 in _NUCLEI:
            for c1 in _CODAS:
                word = o1 + n1 + c1
                if word and word not in seen:
                    seen.add(word)
                    words.append(word)
    rng = random.Random(7)
    while len(words) < VOCAB_SIZE:
        word = "".join(rng.choice(_ONSETS[1:]) + rng.choice(_NUCLEI) for _ in range(2))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return tuple(words[:VOCAB_SIZE])


@cache
def pieces() -> tuple[str, ...]:
    """Per-id text piece as streamed: a space and the word; special tokens decode to ""."""
    return tuple("" if w.startswith("<") else " " + w for w in vocab())


@cache
def json_pieces() -> tuple[str, ...]:
    return tuple(json.dumps(p)[1:-1] for p in pieces())


class TokenSource:
    """Deterministic output ids per request ordinal; seeded by --sim-seed."""

    def __init__(self, seed: int | None) -> None:
        rng = random.Random(seed if seed is not None else random.SystemRandom().random())
        self.table = [rng.randrange(3, VOCAB_SIZE) for _ in range(TABLE_SIZE)]
        self.rng = rng

    def token(self, ordinal: int, index: int) -> int:
        return self.table[(ordinal * 131 + index * 7 + ordinal // TABLE_SIZE) % TABLE_SIZE]
