"""Widgets never shadow the console's global keys (a focused widget's binding wins)."""

from __future__ import annotations

import pytest
from textual.widget import Widget

from console.app.bindings import ACTIONS
from widgets.gpu_panel import GpuPanel
from widgets.log_view import LogView

# A widget may reuse a global key only for the same thing (the GPU panel's `t` opens the
# topology view, as the global `t` does; its `m` and `v` are what the global ones do to it).
SAME_MEANING = {("GpuPanel", "t"), ("GpuPanel", "m"), ("GpuPanel", "v")}


def _keys(bindings: object) -> set[str]:
    keys: set[str] = set()
    for binding in bindings:  # type: ignore[attr-defined]
        keys.update(k.strip() for k in binding.key.split(","))
    return keys


GLOBAL_KEYS = {k for spec in ACTIONS for k in spec.keys.split(",")} - {"slash"}


@pytest.mark.parametrize("widget", [LogView, GpuPanel])
def test_widget_keys_do_not_shadow_global_actions(widget: type[Widget]) -> None:
    clashes = {
        key for key in _keys(widget.BINDINGS) & GLOBAL_KEYS
        if (widget.__name__, key) not in SAME_MEANING
    }
    assert clashes == set()
