"""A stored tune's state read back (`plateau tune --resume` and `--report`): the run store's
`tunes` row is text anyone with the database file can write, so it is read as untrusted
input: bounded in size, parsed without a traceback (truncated JSON, nesting past the parser's
depth, a number past int's digit limit), every number finite, then validated as a TuneState.
A problem is one line naming the tune, the database and the key."""

from __future__ import annotations

import json
import math
from typing import Any

from pydantic import ValidationError

from console.errors import PlateauError
from console.jobs.tune_models import TuneState
from console.store.db import RunStore
from console.text import sanitize

MAX_STATE_CHARS = 8 * 1024 * 1024
"""A tune of 200 steps stores ~0.5 MB; a row past this is not one Plateau wrote."""


class TuneStateError(PlateauError):
    """A stored tune state that cannot be read back."""


def load_state(store: RunStore, tune_id: int) -> TuneState:
    where = f"tune {tune_id} in {store.path}"
    found = store.load_tune(tune_id, MAX_STATE_CHARS)
    if found is None:
        raise TuneStateError(f"no tune {tune_id} in {store.path}")
    length, text = found
    if text is None:
        raise TuneStateError(f"{where}: the stored state is {length} characters, more than "
                             f"the {MAX_STATE_CHARS} a tune state may have")
    return parse_state(text, where)


def parse_state(text: str, where: str) -> TuneState:
    """`text` (a stored state's JSON) as a TuneState, or TuneStateError naming the key."""
    try:
        data = json.loads(text or "{}")
    except (ValueError, RecursionError) as exc:
        why = sanitize(str(exc).splitlines()[0][:200]) if str(exc) else "nested too deep"
        raise TuneStateError(f"{where}: the stored state is not valid JSON ({why})") from None
    if not isinstance(data, dict):
        raise TuneStateError(f"{where}: the stored state is a JSON {type(data).__name__}, "
                             "not an object")
    bad = _non_finite(data, ())
    if bad is not None:
        key, value = bad
        raise TuneStateError(f"{where}: {key}: {value} is not a finite number")
    try:
        return TuneState.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = _key(first["loc"]) or "(the state)"
        raise TuneStateError(f"{where}: {key}: {sanitize(first['msg'][:200])}") from None
    except RecursionError:  # validators nested past Python's depth
        raise TuneStateError(f"{where}: the stored state is nested too deep") from None


def _non_finite(value: Any, path: tuple[str | int, ...]) -> tuple[str, float] | None:
    """The first non-finite number (json reads NaN and Infinity as floats) and its key."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return _key(where), item
        if isinstance(item, dict):
            stack.extend((v, (*where, str(k))) for k, v in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((v, (*where, i)) for i, v in reversed(list(enumerate(item))))
    return None


def _key(loc: tuple[str | int, ...]) -> str:
    """A dotted key of the state, host-written parts made safe and short."""
    return sanitize(".".join(str(part)[:60] for part in loc))[:200]
