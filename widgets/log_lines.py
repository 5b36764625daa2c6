"""LogLines: a lazily rendered, indexed view over a LogStore (toolong-style).

Nothing is pre-rendered per line: `render_line` builds the strip of a visible row on demand,
from the stored (already sanitised) text, into a small LRU cache. Lines are Rich `Text` objects,
never markup. Long lines are cut for display (`…`; the view scrolls sideways) or, with `wrap`,
continue on the next rows; the detail pane shows them whole.
"""

from __future__ import annotations

import re

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.cache import LRUCache
from textual.color import Color
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from console.logs.models import Severity
from console.logs.store import LogStore

MAX_DISPLAY_CHARS = 1000
STRIP_CACHE_ROWS = 256

# Theme variables first (the app's themes define $log-*), then built-in fallbacks.
_SEVERITY_VARIABLES: dict[Severity, tuple[str, ...]] = {
    Severity.ERROR: ("log-error", "error"),
    Severity.WARNING: ("log-warn", "warning"),
    Severity.NOTABLE: ("log-notable", "accent", "success"),
    Severity.INFO: ("log-info", "foreground"),
    Severity.DEBUG: ("log-debug", "foreground-darken-2", "foreground"),
}


class LogLines(ScrollView, can_focus=True, inherit_bindings=False):
    """The scrolling line area of LogView. `cursor` is a visible row index."""

    COMPONENT_CLASSES = {"loglines--cursor", "loglines--match"}
    DEFAULT_CSS = """
    /* No scrollbars while following: the status line says where the view is, long lines are
       cut (the detail pane shows them whole). Paused, a thin one shows the position. */
    LogLines { background: $surface; scrollbar-size: 0 0; }
    LogLines.-paused { scrollbar-size-vertical: 1; }
    LogLines > .loglines--cursor { background: $accent 35%; }
    LogLines > .loglines--match { background: $warning 45%; text-style: bold; }
    """

    cursor: reactive[int] = reactive(0, always_update=True, repaint=False)
    wrap: reactive[bool] = reactive(False)
    """Long lines wrap onto the next rows (else they are cut with `…` and scroll sideways)."""

    class CursorMoved(Message):
        def __init__(self, index: int, *, by_user: bool) -> None:
            super().__init__()
            self.index = index
            self.by_user = by_user

    def __init__(self, store: LogStore, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.store = store
        self.search_pattern: re.Pattern[str] | None = None
        # A few screens of rendered rows. Not more: a Textual Strip carries seven small caches
        # (~20 objects the cyclic GC walks), and while following a busy log nearly every
        # cached row scrolls away for good; 1024 entries made the GC's full collections,
        # which run on the event loop, take 60+ ms.
        self._cache: LRUCache[tuple[int, bool, int], Strip] = LRUCache(STRIP_CACHE_ROWS)
        self._styles: dict[Severity, Style] | None = None
        self._generation = 0
        self._max_width = 1
        self._wrapped: LRUCache[tuple[int, bool, int, int], list[Strip]] = LRUCache(
            STRIP_CACHE_ROWS)
        self._layout_key: tuple[int, ...] | None = None
        self._layout: list[tuple[int, int]] = []

    # -- data updates (called by LogView) ----------------------------------------------------

    def rows_changed(self, new_lines: tuple[str, ...] = ()) -> None:
        for line in new_lines:
            width = min(len(line), MAX_DISPLAY_CHARS + 2)
            if width > self._max_width:
                self._max_width = width
        self.virtual_size = Size(self._max_width, self.store.visible_count)
        self.refresh()

    def reset(self) -> None:
        """The view (filter, search, theme) changed: drop every cached strip."""
        self._generation += 1
        self._cache.clear()
        self._wrapped.clear()
        self.virtual_size = Size(self._max_width, self.store.visible_count)
        self.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles = None
        self._cache.clear()
        self._wrapped.clear()

    # -- rendering ----------------------------------------------------------------------------

    def watch_wrap(self) -> None:
        self._layout_key = None
        self.scroll_to(x=0, animate=False, immediate=True)
        self.refresh()

    def scroll_sideways(self, columns: int) -> None:
        """Move the view `columns` to the right (negative: left); not while wrapping."""
        if not self.wrap:
            self.scroll_to(x=max(0, self.scroll_x + columns), animate=False, immediate=True)

    def render_line(self, y: int) -> Strip:
        if self.wrap:
            return self._render_wrapped(y)
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.scrollable_content_region.width
        base = self.rich_style
        if index >= self.store.visible_count or index < 0:
            return Strip.blank(width, base)
        row_id = self.store.row_id(index)
        key = (row_id, index == self.cursor, self._generation)
        strip = self._cache.get(key)
        if strip is None:
            strip = self._render_row(index, selected=index == self.cursor)
            self._cache[key] = strip
        if strip.cell_length > scroll_x + width > 1:
            # Cut on the right: say so (the detail pane shows the whole line).
            cut = strip.crop_extend(scroll_x, scroll_x + width - 1, base)
            tail = list(cut)[-1].style if cut.cell_length else base
            return Strip([*cut, Segment("…", tail)], width)
        return strip.crop_extend(scroll_x, scroll_x + width, base)

    # -- wrapped rendering: a screen row is a piece of a log row -------------------------------

    def _render_wrapped(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        layout = self._wrap_layout(width, self.scrollable_content_region.height)
        if y >= len(layout):
            return Strip.blank(width, self.rich_style)
        index, piece = layout[y]
        return self._pieces(index, width)[piece]

    def _pieces(self, index: int, width: int) -> list[Strip]:
        key = (self.store.row_id(index), index == self.cursor, self._generation, width)
        pieces = self._wrapped.get(key)
        if pieces is None:
            text = self._row_text(index, selected=index == self.cursor)
            text.no_wrap = False
            lines = text.wrap(self.app.console, max(1, width)) or [Text("")]
            pieces = [
                Strip([Segment(s.text, s.style) for s in line.render(self.app.console)],
                      line.cell_len).apply_style(self.rich_style).crop_extend(0, width,
                                                                              self.rich_style)
                for line in lines
            ]
            self._wrapped[key] = pieces
        return pieces

    def _wrap_layout(self, width: int, height: int) -> list[tuple[int, int]]:
        """(row, piece) per screen row from the top row; the cursor's row is kept whole on
        screen (following the end, the last rows' pieces fill the bottom)."""
        total = self.store.visible_count
        top = min(int(self.scroll_y), max(0, total - 1))
        key = (top, height, width, self._generation, total, self.cursor,
               self.store.row_id(total - 1) if total else -1)
        if key == self._layout_key:
            return self._layout
        cursor = min(self.cursor, total - 1)
        if total and cursor >= top:
            # The first row from which the cursor's row still ends on screen.
            rows, first = 0, cursor
            while first >= 0 and rows + len(self._pieces(first, width)) <= height:
                rows += len(self._pieces(first, width))
                first -= 1
            top = max(top, min(first + 1, cursor))
        layout: list[tuple[int, int]] = []
        index = top
        while index < total and len(layout) < height:
            layout.extend((index, piece) for piece in range(len(self._pieces(index, width))))
            index += 1
        self._layout_key, self._layout = key, layout[:height]
        return self._layout

    def _row_text(self, index: int, *, selected: bool) -> Text:
        event, line_index = self.store.row(index)
        line = event.lines[line_index]
        if len(line) > MAX_DISPLAY_CHARS:
            line = f"{line[:MAX_DISPLAY_CHARS]}… (+{len(line) - MAX_DISPLAY_CHARS} chars)"
        styles = self._severity_styles()
        style = styles[event.severity]
        if event.catalogue_id is not None and line_index == 0:
            style = style + Style(bold=True)
        text = Text(line, style=style, no_wrap=True, end="")
        if self.search_pattern is not None and len(line) < 10_000:
            text.highlight_regex(self.search_pattern, self.get_component_rich_style(
                "loglines--match", partial=True))
        if selected:
            text.stylize(self.get_component_rich_style("loglines--cursor", partial=True))
        return text

    def _render_row(self, index: int, *, selected: bool) -> Strip:
        text = self._row_text(index, selected=selected)
        segments = [Segment(s.text, s.style) for s in text.render(self.app.console)]
        # Under the text, the widget's own background (else the terminal's shows through).
        return Strip(segments, text.cell_len).apply_style(self.rich_style)

    def _severity_styles(self) -> dict[Severity, Style]:
        if self._styles is None:
            variables = self.app.get_css_variables()
            styles: dict[Severity, Style] = {}
            for severity, names in _SEVERITY_VARIABLES.items():
                value = next((variables[n] for n in names if n in variables), None)
                color = Color.parse(value).rich_color if value else None
                styles[severity] = Style(color=color)
            self._styles = styles
        return self._styles

    # -- cursor ---------------------------------------------------------------------------------

    def move_cursor(self, index: int, *, by_user: bool) -> None:
        total = self.store.visible_count
        if total == 0:
            return
        index = max(0, min(index, total - 1))
        self.cursor = index  # cached strips are keyed by (row, selected): no cache flush
        self.scroll_to_region_of(index)
        self.refresh()
        self.post_message(self.CursorMoved(index, by_user=by_user))

    def scroll_to_region_of(self, index: int) -> None:
        height = self.scrollable_content_region.height or 1
        top = int(self.scroll_y)
        if index < top:
            self.scroll_to(y=index, animate=False, immediate=True)
        elif index >= top + height:
            self.scroll_to(y=index - height + 1, animate=False, immediate=True)

    def on_click(self, event: events.Click) -> None:
        self.move_cursor(int(self.scroll_y) + event.y, by_user=True)

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        del event
        self.post_message(self.CursorMoved(self.cursor, by_user=True))
