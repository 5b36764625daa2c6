"""LogLines: a lazily rendered, indexed view over a LogStore (toolong-style).

Nothing is pre-rendered per line: `render_line` builds the strip of a visible row on demand,
from the stored (already sanitised) text, into a small LRU cache. Lines are Rich `Text` objects,
never markup. Long lines are cut for display; the detail pane shows them whole.
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
        self.virtual_size = Size(self._max_width, self.store.visible_count)
        self.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles = None
        self._cache.clear()

    # -- rendering ----------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
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

    def _render_row(self, index: int, *, selected: bool) -> Strip:
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
