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


HELP_CHROME = 8  # the help box's border and padding, the panel's padding, a scrollbar


def _wrapped(text: str, room: int) -> list[str]:
    """`text` in lines of at most `room` columns, broken between words (room < 20: whole)."""
    import textwrap

    if room < 20 or len(text) <= room:
        return [text]
    return textwrap.wrap(text, room, break_long_words=False) or [text]


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
        self._parts = (rows, thresholds, sections)

    def on_mount(self) -> None:
        self._fit()

    def on_resize(self) -> None:
        self._fit()

    def _fit(self) -> None:
        """Descriptions wrap at whole words under their own column at the terminal's width,
        not cut mid-word by the box (issue 26.5). The box's border, padding and scrollbar
        take HELP_CHROME columns."""
        width = self.app.size.width - HELP_CHROME
        if width > 0:
            self.update(self.build(*self._parts, width=width))

    @staticmethod
    def build(
        rows: Sequence[HelpRow],
        thresholds: Thresholds,
        sections: Sequence[tuple[str, Sequence[HelpRow]]] = (),
        *,
        width: int | None = None,
    ) -> Content:
        every = [*rows, *(r for _title, more in sections for r in more)]
        key_width = max((len(_key_names(r.keys)) for r in every), default=4) + 2
        id_width = max((len(r.id) for r in every), default=4) + 2
        lines: list[Content] = []
        for title, section in (("Keys", rows), *sections):
            if lines:
                lines.append(Content(""))
            lines.append(Content.styled(title, "bold $accent"))
            for row in section:
                indent = 2 + key_width + id_width
                said = _wrapped(row.description, (width or 0) - indent)
                lines.append(
                    Content.assemble(
                        (f"  {_key_names(row.keys):<{key_width}}", "bold"),
                        (f"{row.id:<{id_width}}", "$foreground-muted"),
                        said[0],
                    )
                )
                lines += [Content(" " * indent + more) for more in said[1:]]
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
