"""PlateauApp is a class per concern (console/app/base.py): Textual dispatches an `@on` handler
only when its class was built by Textual's metaclass, so a mixin that is a plain class would
keep its handlers and never run them. Every handler of every part must be registered."""

from __future__ import annotations

import inspect

from console.app.app import PlateauApp
from console.app.base import ConsoleBase


def _parts() -> list[type]:
    return [c for c in PlateauApp.__mro__ if c.__module__.startswith("console.app.")]


def test_every_part_is_a_textual_class() -> None:
    parts = _parts()
    assert len(parts) > 5  # the wiring class and its mixins
    for part in parts:
        assert issubclass(part, ConsoleBase), part


def test_every_on_handler_of_every_part_is_registered() -> None:
    found = 0
    for part in _parts():
        registered = {method for handlers in part.__dict__["_decorated_handlers"].values()
                      for method, _selectors in handlers}
        for name, value in vars(part).items():
            if inspect.isfunction(value) and hasattr(value, "_textual_on"):
                assert value in registered, f"{part.__name__}.{name}"
                found += 1
    # the intents, the host-key answer, the run marks, a suggestion's A/B, a failed worker
    assert found >= 8
