"""Modal screens: help, host picker, the A/B picker, the unknown host key question."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, OptionList, Select, Static
from textual.widgets.option_list import Option

from console.config_models import SweepPreset

if TYPE_CHECKING:
    from console.bench.abplan import Estimate
from console.jobs.ab_models import ABRequest
from console.session.events import HostKeyUnknown
from console.text import sanitize
from widgets.help_panel import HelpPanel, HelpRow, Thresholds

DEFAULT_REPEATS = 3
MAX_REPEATS = 20
SHORT_ROWS = 32  # a dialog's fields go compact (one line each) on a terminal this short


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape,q,question_mark,f1", "dismiss", "Close", id="help-close"),
    ]

    def __init__(
        self,
        rows: Sequence[HelpRow],
        thresholds: Thresholds,
        sections: Sequence[tuple[str, Sequence[HelpRow]]] = (),
    ) -> None:
        super().__init__()
        self.rows, self.thresholds, self.sections = rows, thresholds, sections

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box") as box:
            box.border_title = "Help — esc to close"
            yield HelpPanel(self.rows, self.thresholds, sections=self.sections)


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


class ABPicker(ModalScreen[ABRequest | None]):
    """Pick profiles A and B, a sweep preset, its concurrencies, the repeats and whether to
    interleave; the estimate of the total time is shown before anything starts."""

    BINDINGS = [
        Binding("escape", "dismiss(None)", "Cancel", id="ab-cancel"),
        Binding("ctrl+s", "start", "Start", id="ab-start"),
    ]

    def __init__(
        self,
        profiles: Sequence[str],
        presets: Mapping[str, SweepPreset],
        a: str | None,
        b: str | None,
        *,
        restart_s: Callable[[str], float | None] = lambda _name: None,
        measured: Callable[[SweepPreset], dict[int, float]] = lambda _spec: {},
        modelled: Callable[[SweepPreset, str, str], dict[int, float]] = (
            lambda _spec, _a, _b: {}),
        repeats: int = DEFAULT_REPEATS,
        interleave: bool = True,
        run_workload: tuple[str, SweepPreset] | None = None,
        levels: Sequence[int] = (),
        note: str = "",
    ) -> None:
        super().__init__()
        # A cause's A/B: the diagnosed run's workload at the cause's levels, listed first.
        self.run_workload = run_workload[0] if run_workload is not None else None
        first = {run_workload[0]: run_workload[1]} if run_workload is not None else {}
        self.profiles, self.presets = list(profiles), {**first, **presets}
        self.note, self.levels = note, tuple(levels)
        self.last_estimate: Estimate | None = None  # what the dialog said when Start was hit
        self._preset_shown = ""
        self.a, self.b = a, b
        self.restart_s = restart_s
        self.measured = measured
        self.modelled = modelled
        self.repeats, self.interleave = repeats, interleave

    def compose(self) -> ComposeResult:
        def options(names: Sequence[str]) -> list[tuple[str, str]]:
            return [(n, n) for n in names]

        first = self._preset_shown = next(iter(self.presets))
        with Vertical(id="ab-box") as box:
            box.border_title = "A/B: repeats of A and B, then a verdict"
            if self.note:
                yield Static(Text(self.note), id="ab-why")
            with Horizontal(classes="ab-row"):
                yield Label("A (baseline)")
                yield Select(options(self.profiles), value=self.a or Select.NULL, id="ab-a",
                             allow_blank=self.a is None)
            with Horizontal(classes="ab-row"):
                yield Label("B (candidate)")
                yield Select(options(self.profiles), value=self.b or Select.NULL, id="ab-b",
                             allow_blank=self.b is None)
            with Horizontal(classes="ab-row"):
                yield Label("sweep preset")
                yield Select(options(list(self.presets)), value=first, id="ab-preset",
                             allow_blank=False)
            with Horizontal(classes="ab-row"):
                yield Label("concurrencies")
                levels = ",".join(map(str, self.levels)) or _levels(self.presets[first])
                yield Input(levels, id="ab-concurrency")
            with Horizontal(classes="ab-row", id="ab-repeat-row"):
                yield Label("repeats")
                yield Input(str(self.repeats), id="ab-repeats", type="integer")
                yield Checkbox("interleave A B A B", self.interleave, id="ab-interleave")
            yield Static("", id="ab-estimate")
            yield Static("", id="ab-message")
            with Horizontal(id="ab-buttons"):
                yield Button("Cancel (esc)", id="ab-cancel-button")
                yield Button("Start A/B (ctrl+s)", id="ab-start-button", variant="primary")

    def on_resize(self) -> None:
        self._fit()

    def _fit(self) -> None:
        """Below SHORT_ROWS rows every field is one line (no borders), so the estimate and
        Start/Cancel stay on screen at 80x24 (issue 26.4)."""
        short = self.app.size.height < SHORT_ROWS
        self.set_class(short, "-short")
        for widget in self.query("Select, Input, Button, Checkbox"):
            widget.compact = short  # type: ignore[attr-defined]

    def _value(self, widget_id: str) -> str | None:
        value = self.query_one(f"#{widget_id}", Select).value
        return value if isinstance(value, str) else None

    def choice(self) -> ABRequest | str:
        """The request, or why not yet."""
        a, b, preset = self._value("ab-a"), self._value("ab-b"), self._value("ab-preset")
        if a is None or b is None or preset is None:
            return "pick both profiles and a preset"
        if a == b:
            return "A and B must be different profiles"
        levels = parse_levels(self.query_one("#ab-concurrency", Input).value)
        if isinstance(levels, str):
            return levels
        repeats_text = self.query_one("#ab-repeats", Input).value.strip()
        if not repeats_text.isdigit() or not 1 <= int(repeats_text) <= MAX_REPEATS:
            return f"repeats: a whole number from 1 to {MAX_REPEATS}"
        interleave = self.query_one("#ab-interleave", Checkbox).value
        workload = self.presets[preset] if preset == self.run_workload else None
        return ABRequest(a, b, preset, int(repeats_text), interleave, tuple(levels), workload)

    def _estimate(self, request: ABRequest) -> str:
        from console.bench.abplan import estimate  # the planner imports the load engines

        spec = request.spec(self.presets[request.preset])  # the run's workload, if picked
        restarts = [self.restart_s(request.a), self.restart_s(request.b)]
        known = [r for r in restarts if r is not None]
        guess = estimate(
            spec, request.repeats, request.interleave,
            restart_s=max(known) if known else None, measured_step_s=self.measured(spec),
            model_step_s=self.modelled(spec, request.a, request.b),
        )
        self.last_estimate = guess
        text = f"estimate {guess.text()}"
        if request.repeats < 2:
            text += "; 1 repeat: the verdict cannot tell noise from a difference"
        return text

    def _refresh(self) -> None:
        chosen = self.choice()
        message = chosen if isinstance(chosen, str) else ""
        self.query_one("#ab-message", Static).update(Text(message, style="yellow"))
        self.query_one("#ab-start-button", Button).disabled = isinstance(chosen, str)
        estimate_text = "" if isinstance(chosen, str) else self._estimate(chosen)
        self.query_one("#ab-estimate", Static).update(Text(estimate_text))

    def on_select_changed(self, event: Select.Changed) -> None:
        if (event.select.id == "ab-preset" and isinstance(event.value, str)
                and event.value != self._preset_shown):
            # Only a change of preset: the Changed of the first value keeps given levels.
            self._preset_shown = event.value
            self.query_one("#ab-concurrency", Input).value = _levels(self.presets[event.value])
        self._refresh()

    def on_input_changed(self) -> None:
        self._refresh()

    def on_checkbox_changed(self) -> None:
        self._refresh()

    def on_mount(self) -> None:
        self._fit()
        self._refresh()

    def action_start(self) -> None:
        chosen = self.choice()
        if not isinstance(chosen, str):
            self.dismiss(chosen)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "ab-start-button":
            self.action_start()
        else:
            self.dismiss(None)


def _levels(preset: SweepPreset) -> str:
    return ",".join(str(c) for c in preset.concurrency)


def parse_levels(text: str) -> list[int] | str:
    """`1,4,16` -> [1, 4, 16], or what is wrong with it."""
    parts = [p for p in text.replace(" ", "").split(",") if p]
    if not parts or not all(p.isdigit() and 1 <= int(p) <= 65536 for p in parts):
        return "concurrencies: numbers from 1 to 65536, e.g. 4,16,64"
    return sorted({int(p) for p in parts})


class HostKeyScreen(ModalScreen[bool]):
    """An unknown host key: who, which key, where it would be saved; Accept or Refuse.

    Refuse has the focus, so a stray enter never trusts a key; `y` accepts, `n`/esc refuse."""

    DEFAULT_CSS = """
    HostKeyScreen { align: center middle; }
    #hostkey-box {
        width: 90; max-width: 95%; height: auto; max-height: 90%;
        border: thick $warning; background: $surface; padding: 0 2;
    }
    #hostkey-details { margin: 1 0; }
    #hostkey-buttons { height: auto; align-horizontal: right; margin-top: 1; }
    #hostkey-buttons Button { margin-left: 2; }
    """

    BINDINGS = [
        Binding("y", "decide(True)", "Accept", id="hostkey-accept"),
        Binding("n,escape", "decide(False)", "Refuse", id="hostkey-refuse"),
    ]

    def __init__(self, key: HostKeyUnknown) -> None:
        super().__init__()
        self.key = key

    def compose(self) -> ComposeResult:
        key = self.key
        with Vertical(id="hostkey-box") as box:
            box.border_title = f"Unknown host key — {sanitize(key.host)}"
            rows = Text()
            for label, value, style in (
                ("host", key.address, ""),
                ("port", str(key.port), ""),
                ("key type", key.key_type, ""),
                ("fingerprint", key.fingerprint, "bold"),
                ("saved to", f"{key.known_hosts}  (if you accept)", ""),
            ):
                rows.append(f"{label:<13}", style="bold")
                rows.append(sanitize(value), style=style)
                rows.append("\n")
            rows.rstrip()
            yield Static(rows, id="hostkey-details")
            yield Static(Text(
                "known_hosts has no key for this host, so Plateau cannot tell it from an "
                "impostor. Compare the fingerprint with the host's own (on the host: "
                "ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub) before accepting. Accepted, it "
                "is saved and checked on every later connection."
            ), id="hostkey-explain")
            with Horizontal(id="hostkey-buttons"):
                yield Button("Refuse", id="hostkey-refuse-button", variant="default")
                yield Button("Accept", id="hostkey-accept-button", variant="warning")
            yield Static(Text("y: accept   n / esc: refuse"), classes="confirm-keys")

    def on_mount(self) -> None:
        self.query_one("#hostkey-refuse-button", Button).focus()

    def action_decide(self, accept: bool) -> None:
        self.dismiss(accept)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "hostkey-accept-button")


class ConfirmScreen(ModalScreen[bool]):
    """A yes/no question before anything destructive (restart)."""

    BINDINGS = [
        Binding("y,enter", "dismiss(True)", "Yes", id="confirm-yes"),
        Binding("n,escape", "dismiss(False)", "No", id="confirm-no"),
    ]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Static(self.question, markup=False)
            yield Static("y: yes   n / esc: no", classes="confirm-keys", markup=False)
