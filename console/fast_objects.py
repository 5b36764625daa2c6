"""A cheaper constructor for frozen slotted dataclasses built once per log line."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields, make_dataclass
from typing import Any, TypeVar, cast

_T = TypeVar("_T")


def fast_constructor(cls: type[_T]) -> Callable[..., _T]:
    """A constructor for frozen slotted dataclass `cls` that is ~4x cheaper; it takes every
    field, positionally, in declaration order (no defaults).

    A frozen dataclass's `__init__` sets every field through `object.__setattr__` (about
    70 ns each); the parser builds one event per log line, so that alone was a quarter of the
    parse time. We build a mutable twin with the same slots (plain attribute stores) and then
    re-class the instance: the result IS a `cls` (frozen, same eq/hash/repr). CPython allows
    the `__class__` switch only between identical layouts; if that ever fails we fall back to
    the real constructor, so the worst case is the old speed, never a wrong object.
    """
    twin = make_dataclass(
        f"_{cls.__name__}Builder",
        [(f.name, Any) for f in fields(cls)],  # type: ignore[arg-type]
        slots=True,
        eq=False,
        repr=False,
    )

    def build(*args: Any) -> _T:
        obj = twin(*args)
        obj.__class__ = cls
        return cast(_T, obj)

    build.twin = twin if _can_reclass(twin, cls) else None  # type: ignore[attr-defined]
    return build if build.twin is not None else cls  # type: ignore[attr-defined]


def _can_reclass(twin: type, cls: type) -> bool:
    try:
        obj = twin(*(None for _ in fields(cls)))
        obj.__class__ = cls
    except TypeError:
        return False
    return type(obj) is cls
