"""The console's footer: its keys by importance, as many as fit the width, the rest in `?`.

Keys that cannot act now stay greyed (relevant, not now: `r` during a sweep) or are left out
(irrelevant now: `x` without a sweep, `]` with one host); pressed anyway, each says why (the
app's `_refuse`), in the words of the one refusal policy (console/server/refusal.py). The
widths are Textual's FooterKey ones: `key desc` plus padding (3 cells) or, compact below 120
columns, plus a 1-cell gap.
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey  # not re-exported; Footer yields these

from console.app.bindings import ACTIONS
from console.app.contract import console_app

# What an operator reaches for first, so a narrow footer drops the rarest keys. `?` always has
# its room: it lists everything the footer had none for.
FOOTER_FIRST = ("restart", "sweep", "cancel-sweep", "flags", "ab", "filter", "help", "quit",
                "maximize", "history", "compare", "events", "dashboard", "config", "topology")
ALWAYS = "help"
_RANK = {
    spec.id: rank
    for rank, spec in enumerate(
        [*(s for i in FOOTER_FIRST for s in ACTIONS if s.id == i),
         *(s for s in ACTIONS if s.id not in FOOTER_FIRST)]
    )
}


def key_cells(key_display: str, description: str, *, compact: bool) -> int:
    """Cells one footer key takes (Textual's FooterKey padding and margins)."""
    return len(key_display) + len(description) + (2 if compact else 3)


class PlateauFooter(Footer):
    """The footer of every console screen: app keys by rank, then the focused widget's."""

    _composed: tuple[tuple[str, str, str, str, bool, str], ...] | None = None
    """What the last compose showed (None: nothing yet)."""

    def on_resize(self) -> None:
        self.refresh(recompose=True)

    async def recompose(self) -> None:
        # Resizes, focus moves and every refresh of the bindings ask for a recompose; most
        # change nothing the footer shows. Rebuilding ~15 keys costs tens of ms (three times
        # before the first frame, more while a host's session starts): only when it differs.
        if self.is_mounted and self._composed is not None and self._plan() == self._composed:
            return
        await super().recompose()

    def _plan(self) -> tuple[tuple[str, str, str, str, bool, str], ...] | None:
        """The keys to show as (key, display, description, action, disabled, tooltip), in
        order; None when there is no screen yet.

        Textual's Footer shows nothing until the screen reports its bindings, and then asks
        for a recompose after the next refresh: the first frame would have no keys, the keys
        a second frame later (tens of ms at start-up). The app's keys are
        known when the footer is first composed; the bindings' report recomposes if what the
        focused widget adds changes the plan."""
        if not self.is_attached:
            return None
        app = self.app
        console = console_app(self)  # the refusal policy's answers (console.server.refusal)
        active = list(self.screen.active_bindings.values())
        order = {id(a): n for n, a in enumerate(active)}

        # A screen of its own keys (the fleet: sort, filter; the tune: start, objective,
        # stop) shows them before the app's.
        own_first = getattr(self.screen, "footer_own_keys_first", False)

        def rank(item: Any) -> tuple[int, int]:
            binding_id = item.binding.id
            if item.node is app and binding_id in _RANK:
                return (0, _RANK[binding_id])
            return (-1 if own_first else 1, order[id(item)])

        room = self.size.width or app.size.width
        chosen: list[tuple[Any, str, str | None]] = []
        seen: set[str] = set()
        for item in sorted(active, key=rank):
            binding = item.binding
            if not binding.show or binding.action in seen:
                continue
            seen.add(binding.action)
            own = binding.id if item.node is app else None
            if own and console.footer_state(own) == "hidden":
                continue
            why = console.unavailable_reason(own) if own else None
            chosen.append((item, app.get_key_display(binding), why))
        cells = [key_cells(d, i.binding.description, compact=self.compact) for i, d, _ in chosen]
        room -= sum(c for (i, _, _), c in zip(chosen, cells, strict=True)
                    if i.binding.id == ALWAYS)
        plan = []
        for (item, display, why), width in zip(chosen, cells, strict=True):
            binding = item.binding
            if binding.id != ALWAYS:
                if width > room:
                    continue  # no room: `?` lists it
                room -= width
            plan.append((binding.key, display, binding.description, binding.action,
                         not item.enabled or why is not None, why or item.tooltip))
        return tuple(plan)

    def compose(self) -> ComposeResult:
        plan = self._plan()
        self._composed = plan
        for key, display, description, action, disabled, tooltip in plan or ():
            footer_key = FooterKey(key, display, description, action, disabled=disabled,
                                   tooltip=tooltip)
            # Born as compact as the footer: a FooterKey starts compact and the binding then
            # sets the footer's value, each change restyling the key (two per key, ~15 keys,
            # before the first frame).
            footer_key.set_reactive(FooterKey.compact, self.compact)
            footer_key.set_class(self.compact, "-compact", update=False)
            yield footer_key.data_bind(compact=Footer.compact)
