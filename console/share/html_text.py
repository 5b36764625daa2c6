"""Host-written text as HTML text: the one escape every report module uses.

`html.escape` alone passes ESC, BEL, NUL and the bidi overrides through into the page's bytes
(they run in the terminal of whoever `cat`s the file, or reorder what a reader sees), so each
line is first sanitised as everywhere else in the core: escape sequences removed, control and
bidi characters shown as placeholders. Line breaks are kept (a `<pre>` of log lines needs them).
"""

from __future__ import annotations

import html

from console.text import sanitize_lines


def escape(text: str) -> str:
    return html.escape(sanitize_lines(text))
