"""What the first frame no longer does twice, and what it still must do.

A mode screen's first showing keeps the styles its mount gave its widgets (FreshScreen: Textual
asked for two more whole-screen restyles), and restyles as Textual does once it has been
suspended. The app's stylesheet re-parsed for a theme (ReparsedInPlace) keeps those rules for
the next parse instead of parsing every source again, and uses the new theme's variables.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from textual import events
from textual.app import App, ComposeResult
from textual.color import Color
from textual.css import stylesheet as stylesheet_module
from textual.css.errors import UnresolvedVariableError
from textual.css.parse import parse as textual_parse
from textual.css.stylesheet import Stylesheet
from textual.screen import Screen
from textual.widgets import Static

from console.app.modes import _mode_screen
from console.app.screens.fresh import FreshScreen
from console.app.stylesheet import ReparsedInPlace


class Probe(FreshScreen):
    CSS = "#probe { color: #ff0000; }"

    def __init__(self) -> None:
        super().__init__()
        self.resumes: list[events.ScreenResume] = []

    def compose(self) -> ComposeResult:
        yield Static("probe", id="probe")

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        self.resumes.append(event)  # FreshScreen's handler runs after this one


class Other(Screen[None]):
    pass


class ProbeApp(App[None]):
    MODES: ClassVar[dict[str, Any]] = {"probe": _mode_screen(Probe), "other": Other}

    async def on_mount(self) -> None:
        await self.switch_mode("probe")


async def test_a_fresh_screen_keeps_its_mount_styles_until_it_is_suspended() -> None:
    app = ProbeApp()
    async with app.run_test(size=(40, 10)) as pilot:
        await pilot.pause()
        probe = app.screen
        assert isinstance(probe, Probe)
        first = list(probe.resumes)
        assert first and not any(e.refresh_styles for e in first)
        # styled all the same, by its mount: its own CSS is in effect
        assert probe.query_one("#probe").styles.color == Color(255, 0, 0)
        await app.switch_mode("other")
        await pilot.pause()
        await app.switch_mode("probe")
        await pilot.pause()
        assert probe.resumes[-1].refresh_styles  # after a suspension: Textual's restyle


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The sources Textual's CSS parser is run on from now (a cached parse is not a run)."""
    parsed: list[str] = []
    parse = textual_parse

    def counted(scope: str, css: str, read_from: Any, **kwargs: Any) -> Any:
        parsed.append(str(read_from[1] or read_from[0]))
        return parse(scope, css, read_from, **kwargs)

    monkeypatch.setattr(stylesheet_module, "parse", counted)
    return parsed


def _rules_text(sheet: Stylesheet) -> str:
    return "\n".join(rule.css for rule in sheet.rules)


@pytest.mark.parametrize("kind", [Stylesheet, ReparsedInPlace])
def test_a_theme_reparse_uses_the_new_variables(kind: type[Stylesheet]) -> None:
    sheet = kind(variables={"accent": "#111111"})
    sheet.add_source("Static { color: $accent; }", read_from=("app.tcss", ""))
    assert "#111111" in _rules_text(sheet)
    sheet.set_variables({"accent": "#222222"})
    sheet.reparse()
    assert "#222222" in _rules_text(sheet) and "#111111" not in _rules_text(sheet)


def test_after_a_reparse_the_next_parse_reuses_its_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    """Textual's reparse kept nothing for the next parse (a widget's CSS added): every
    source parsed twice before the first frame; in place, the added source alone."""
    for kind, expected in ((Stylesheet, ["app.tcss", "Widget.DEFAULT_CSS"]),
                           (ReparsedInPlace, ["Widget.DEFAULT_CSS"])):
        sheet = kind(variables={"accent": "#111111"})
        sheet.add_source("Static { color: $accent; }", read_from=("app.tcss", ""))
        sheet.set_variables({"accent": "#222222"})
        sheet.reparse()
        parsed = _counting(monkeypatch)
        sheet.add_source("Widget { width: 1; }", read_from=("w.py", "Widget.DEFAULT_CSS"))
        assert sheet.rules
        assert parsed == expected, kind
        monkeypatch.undo()


def test_a_source_that_fails_to_parse_leaves_the_rules_as_they_were() -> None:
    sheet = ReparsedInPlace(variables={"accent": "#111111"})
    sheet.add_source("Static { color: $accent; }", read_from=("app.tcss", ""))
    before = _rules_text(sheet)
    sheet.add_source("Static { color: $missing; }", read_from=("bad.tcss", ""))
    sheet.set_variables({"accent": "#111111"})
    with pytest.raises(UnresolvedVariableError):
        sheet.reparse()
    assert _rules_text(sheet) == before
