"""Modal screens: help, host picker."""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from widgets.help_panel import HelpPanel, HelpRow, Thresholds


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape,q,question_mark,f1", "dismiss", "Close", id="help-close"),
    ]

    def __init__(self, rows: Sequence[HelpRow], thresholds: Thresholds) -> None:
        super().__init__()
        self.rows, self.thresholds = rows, thresholds

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box") as box:
            box.border_title = "Help — esc to close"
            yield HelpPanel(self.rows, self.thresholds)


class HostPicker(ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel", id="hosts-cancel")]

    def __init__(self, hosts: Sequence[tuple[str, str]], active: str) -> None:
        super().__init__()
        self.hosts, self.active = hosts, active

    def compose(self) -> ComposeResult:
        options = [Option(f"{name}  {status}", id=name) for name, status in self.hosts]
        picker = OptionList(*options, id="host-list")
        picker.border_title = "Switch host"
        yield picker

    def on_mount(self) -> None:
        picker = self.query_one(OptionList)
        names = [name for name, _ in self.hosts]
        if self.active in names:
            picker.highlighted = names.index(self.active)
        picker.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)
