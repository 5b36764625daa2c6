"""Pick one of the host's GPU processes to signal: the operator's own are choosable, another
user's are listed greyed out with the reason, so the list still tells the whole story."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from console.gpu.processes import GpuProcessRow


class ProcessPicker(ModalScreen[GpuProcessRow | None]):
    DEFAULT_CSS = """
    ProcessPicker { align: center middle; }
    #gpu-proc-box {
        width: 110; max-width: 95%; height: auto; max-height: 80%;
        border: thick $warning; background: $surface; padding: 0 1;
    }
    #gpu-proc-list { height: auto; max-height: 20; }
    """
    BINDINGS = [Binding("escape", "dismiss(None)", "Cancel", id="gpu-procs-cancel")]

    def __init__(self, host: str, rows: Sequence[GpuProcessRow]) -> None:
        super().__init__()
        self.host = host
        self.rows = list(rows)

    def compose(self) -> ComposeResult:
        with Vertical(id="gpu-proc-box") as box:
            box.border_title = f"GPU processes on {self.host}: pick one of yours to signal"
            options = []
            for k, row in enumerate(self.rows):
                text = Text(row.label, no_wrap=True, overflow="ellipsis")
                if row.refusal:
                    text.append(f"  ({row.refusal})", style="italic")
                options.append(Option(text, id=str(k), disabled=row.refusal is not None))
            yield OptionList(*options, id="gpu-proc-list")
            yield Static("enter: choose (a confirmation follows)   esc: cancel",
                         classes="confirm-keys", markup=False)

    def on_mount(self) -> None:
        picker = self.query_one(OptionList)
        picker.focus()
        own = [k for k, row in enumerate(self.rows) if row.refusal is None]
        if own:
            picker.highlighted = own[0]

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(self.rows[int(event.option.id or 0)])
