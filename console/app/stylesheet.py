"""The app's stylesheet: Textual's, re-parsed in place when the theme's variables change.

Textual's `Stylesheet.reparse` (a theme set, as the console does before its first frame) parses
every source in a throwaway stylesheet and keeps only its rules, not their parse cache; the
next `parse` (the first widget of a new kind adds its CSS, at once on the first screen) then
parses every source a second time, themes/app.tcss included: ~5 ms of the first frame.
Parsed here instead, under the same variables (`set_variables` has just emptied the cache,
whose key does not hold them), the next parse reuses them. A source that fails to parse
leaves the rules as they were and is kept out of later parses, as Textual's does.
"""

from __future__ import annotations

from textual.css.stylesheet import Stylesheet


class ReparsedInPlace(Stylesheet):
    def reparse(self) -> None:
        self.parse()
