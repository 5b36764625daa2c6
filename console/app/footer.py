"""The console's footer: its keys by importance, as many as fit the width, the rest in `?`.

Keys that cannot act now stay greyed (relevant, not now: `r` during a sweep) or are left out
(irrelevant now: `x` without a sweep, `]` with one host); pressed anyway, each says why (the
app's `_refuse`), in the words of the one refusal policy (console/server/refusal.py). The
widths are Textual's FooterKey ones: `key desc` plus padding (3 cells) or, compact below 120
columns, plus a 1-cell gap.

One widget draws the whole line, styled as Textual's Footer draws its keys (the same component
classes and padding): Textual's Footer is a container of one FooterKey widget per key, ~15
widgets to compose, style, lay out and render before the console's first frame (issue 42:
~0.12 G instructions of `plateau demo`'s start-up, 5% of it). A click, the hover highlight and
a key's tooltip go by the cell under the pointer.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from rich.style import Style
from rich.text import Text
from textual import events
from textual.reactive import reactive
from textual.screen import Screen
from textual.widget import Widget

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


class ShownKey(NamedTuple):
    """One key as the footer shows it, and the cells it takes (x from the footer's left)."""

    key: str
    key_display: str
    description: str
    action: str
    disabled: bool
    tooltip: str
    start: int
    end: int


PlanRow = tuple[str, str, str, str, bool, str]


class PlateauFooter(Widget, can_focus=False):
    """The footer of every console screen: app keys by rank, then the focused widget's."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES = {  # Textual's FooterKey's, with its hover and greyed states
        "footer-key--key", "footer-key--description", "footer-key--item",
        "footer-key--hover", "footer-key--disabled",
    }
    DEFAULT_CSS = """
    PlateauFooter {
        color: $footer-foreground;
        background: $footer-background;
        dock: bottom;
        height: 1;
        width: 1fr;
        text-wrap: nowrap;
        text-overflow: clip;
        .footer-key--item { background: $footer-item-background; }
        .footer-key--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
            padding: 0 1;
        }
        .footer-key--description {
            padding: 0 1 0 0;
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        .footer-key--hover {
            color: $footer-key-foreground;
            background: $block-hover-background;
        }
        .footer-key--disabled { text-style: dim; }
        &.-compact {
            .footer-key--key { padding: 0; }
            .footer-key--description { padding: 0 0 0 1; }
        }
    }
    """

    compact = reactive(False, toggle_class="-compact", layout=False)
    """Below 120 columns: no padding around a key, a one-cell gap between keys."""

    _shown: tuple[ShownKey, ...] | None = None
    """What the last render drew (None: nothing yet)."""
    _hover: int | None = None
    """The index of the key under the pointer."""

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen[Any]) -> None:
        # A focus move or a refresh of the bindings: redrawn only when the plan differs.
        if self.is_attached and screen is self.screen:
            self.call_after_refresh(self.replan)

    def on_resize(self) -> None:
        self.replan()

    def watch_compact(self) -> None:
        self.replan()

    def replan(self) -> None:
        """Redraw if the keys to show (or their state) changed since the last render."""
        if self._shown is None or self._plan() != tuple(k[:6] for k in self._shown):
            self.refresh()

    @property
    def shown_keys(self) -> tuple[ShownKey, ...]:
        """The keys as last drawn, left to right (empty before the first render)."""
        return self._shown or ()

    def render(self) -> Text:
        key_style = self.get_component_rich_style("footer-key--key")
        description_style = self.get_component_rich_style("footer-key--description")
        key_padding = self.get_component_styles("footer-key--key").padding
        description_padding = self.get_component_styles("footer-key--description").padding
        item = self.get_component_rich_style("footer-key--item", partial=True)
        line = Text(no_wrap=True, end="")
        shown: list[ShownKey] = []
        for index, row in enumerate(self._plan() or ()):
            _key, display, description, _action, disabled, _tooltip = row
            if description:
                label = Text.assemble(
                    (" " * key_padding.left + display + " " * key_padding.right, key_style),
                    (" " * description_padding.left + description
                     + " " * description_padding.right, description_style))
            else:
                label = Text.assemble((display, key_style))
            label.stylize_before(self._item_style(item, disabled, hovered=index == self._hover))
            start = line.cell_len
            line.append_text(label)
            shown.append(ShownKey(*row, start, line.cell_len))
            if self.compact:
                line.append(" ")  # FooterKey's right margin
        self._shown = tuple(shown)
        return line

    def _item_style(self, item: Style, disabled: bool, *, hovered: bool) -> Style:
        style = self.rich_style + item
        if hovered:
            style += self.get_component_rich_style("footer-key--hover", partial=True)
        if disabled:
            style += self.get_component_rich_style("footer-key--disabled", partial=True)
        return style

    def _key_at(self, x: int) -> int | None:
        return next((n for n, k in enumerate(self.shown_keys) if k.start <= x < k.end), None)

    def on_mouse_move(self, event: events.MouseMove) -> None:
        self._point_at(self._key_at(event.x))

    def on_leave(self) -> None:
        self._point_at(None)

    def _point_at(self, index: int | None) -> None:
        if index == self._hover:
            return
        self._hover = index
        self.tooltip = self.shown_keys[index].tooltip or None if index is not None else None
        self.refresh()

    def on_mouse_down(self, event: events.MouseDown) -> None:
        index = self._key_at(event.x)
        if index is None:
            return
        shown = self.shown_keys[index]
        if shown.disabled:
            self.app.bell()
        else:
            self.app.simulate_key(shown.key)

    def _plan(self) -> tuple[PlanRow, ...] | None:
        """The keys to show as (key, display, description, action, disabled, tooltip), in
        order; None when there is no screen yet.

        Textual's Footer shows nothing until the screen reports its bindings, and then asks
        for a recompose after the next refresh: the first frame would have no keys, the keys
        a second frame later (tens of ms at start-up). The app's keys are known when the
        footer first renders; the bindings' report redraws if what the focused widget adds
        changes the plan."""
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
        plan: list[PlanRow] = []
        for (item, display, why), width in zip(chosen, cells, strict=True):
            binding = item.binding
            if binding.id != ALWAYS:
                if width > room:
                    continue  # no room: `?` lists it
                room -= width
            plan.append((binding.key, display, binding.description, binding.action,
                         not item.enabled or why is not None, why or item.tooltip))
        return tuple(plan)
