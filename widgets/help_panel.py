"""The `?` help: every action with its id and keys, and the thresholds the colours use."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from textual.content import Content
from textual.widgets import Static


@dataclass(frozen=True)
class HelpRow:
    id: str
    keys: str
    description: str


@dataclass(frozen=True)
class Thresholds:
    gpu_load_mid: float
    gpu_load_high: float
    gpu_interval_s: float
    log_max_lines: int


def _key_names(keys: str) -> str:
    names = {
        "question_mark": "?",
        "slash": "/",
        "colon": ":",
        "right_square_bracket": "]",
        "left_square_bracket": "[",
        "pageup": "pgup",
        "pagedown": "pgdn",
        "less_than_sign": "<",
        "greater_than_sign": ">",
    }
    return " or ".join(names.get(k.strip(), k.strip()) for k in keys.split(","))


class HelpPanel(Static):
    DEFAULT_CSS = """
    HelpPanel { width: auto; height: auto; padding: 0 1; }
    """

    def __init__(
        self,
        rows: Sequence[HelpRow],
        thresholds: Thresholds,
        *,
        sections: Sequence[tuple[str, Sequence[HelpRow]]] = (),
        id: str | None = None,
    ) -> None:
        super().__init__(self.build(rows, thresholds, sections), id=id, markup=False)

    @staticmethod
    def build(
        rows: Sequence[HelpRow],
        thresholds: Thresholds,
        sections: Sequence[tuple[str, Sequence[HelpRow]]] = (),
    ) -> Content:
        every = [*rows, *(r for _title, more in sections for r in more)]
        width = max((len(_key_names(r.keys)) for r in every), default=4) + 2
        id_width = max((len(r.id) for r in every), default=4) + 2
        lines: list[Content] = []
        for title, section in (("Keys", rows), *sections):
            if lines:
                lines.append(Content(""))
            lines.append(Content.styled(title, "bold $accent"))
            for row in section:
                lines.append(
                    Content.assemble(
                        (f"  {_key_names(row.keys):<{width}}", "bold"),
                        (f"{row.id:<{id_width}}", "$foreground-muted"),
                        row.description,
                    )
                )
        lines += [
            Content(""),
            Content.styled("Remap in the config:", "bold $accent"),
            Content('  [keymap]  restart = "f5"   (several keys: "f5,ctrl+r")'),
            Content("  A key your terminal or tmux takes (tmux's prefix is ctrl+b) can be"),
            Content("  remapped here; every action is also in the palette (: or ctrl+p)."),
            Content(""),
            Content.styled("Thresholds", "bold $accent"),
            Content.assemble(
                "  GPU load: ",
                (f"low < {thresholds.gpu_load_mid:g}%", "$gpu-load-low"),
                "  ",
                (
                    f"mid {thresholds.gpu_load_mid:g}-{thresholds.gpu_load_high:g}%",
                    "$gpu-load-mid",
                ),
                "  ",
                (f"high >= {thresholds.gpu_load_high:g}%", "$gpu-load-high"),
            ),
            Content(f"  GPU sample every {thresholds.gpu_interval_s:g} s; "
                    f"log keeps {thresholds.log_max_lines:,} lines"),
            Content.assemble(
                "  Log: ",
                ("error", "$log-error"), " ", ("warn", "$log-warn"), " ",
                ("notable", "$log-notable"), " ", ("info", "$log-info"), " ",
                ("debug", "$log-debug"),
            ),
        ]
        return Content("\n").join(lines)
