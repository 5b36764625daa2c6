"""The flags editor: a modal to edit a launch profile's backend flags, then restart with them
(ctrl+r) or save them as a profile (ctrl+s).

It does no I/O. The app gives it the profile, the host's discovered schema and the running
server's flags; it returns a `FlagsEditorResult` (or None when cancelled) saying which of the
two the operator chose; the app asks its one confirmation (restart, or overwriting a profile).

Few keys: the first field has the focus; up/down move between fields; on a choice, a letter
picks the next choice starting with it and left/right step through them (enter opens the
list). Switching the MoE runner and restarting is `f`, `t`, `ctrl+r`, `y`; ctrl+n goes to the
profile's name (below some 25 fields: Tab would take as many presses).

The save's own name rule (`name_problem`, given by the app) is checked here, before the
editor closes: a name the save refuses is said under the fields and the edit stays.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.validation import Function
from textual.widgets import Button, Input, Label, Select, Static

from console.config_models import ServerProfile
from console.server.flags import FlagSchema
from console.server.profile_edit import (
    EditableFlag,
    FlagChange,
    build_profile,
    diff_flags,
    editable_flags,
    effective_flags,
)
from console.server.validate import ValidationReport
from console.text import sanitize

SHORT_ROWS = 32  # below this many terminal rows the fields and buttons go compact


@dataclass(frozen=True)
class FlagsEditorResult:
    name: str
    profile: ServerProfile
    changes: tuple[FlagChange, ...]  # against the running server (or the base profile)
    warnings: tuple[str, ...] = ()
    action: Literal["restart", "save"] = "save"
    """restart: run with these flags now (kept for this run); save: write the profile."""



class FlagSelect(Select[str]):
    """A choice that changes without opening its list: a letter jumps to the next choice
    starting with it, left/right step; up/down leave for the previous/next field (enter and
    space still open the list)."""

    BINDINGS = [
        Binding("enter,space", "show_overlay", "Choices", show=False),
        Binding("left", "step(-1)", "Previous choice", show=False),
        Binding("right", "step(1)", "Next choice", show=False),
        Binding("up", "app.focus_previous", "Previous field", show=False),
        Binding("down", "app.focus_next", "Next field", show=False),
    ]

    def __init__(self, choices: tuple[str, ...], **kwargs: object) -> None:
        super().__init__([(c, c) for c in choices], **kwargs)  # type: ignore[arg-type]
        self.choices = choices

    def action_step(self, step: int) -> None:
        values: list[str | None] = [None, *self.choices]  # None: the server's default
        current = self.value if isinstance(self.value, str) else None
        index = values.index(current) if current in values else 0
        chosen = values[(index + step) % len(values)]
        self.value = Select.NULL if chosen is None else chosen

    def on_key(self, event: events.Key) -> None:
        char = event.character
        if self.expanded or not char or not char.isalnum() or len(char) != 1:
            return
        current = self.value if isinstance(self.value, str) else None
        start = self.choices.index(current) + 1 if current in self.choices else 0
        ordered = self.choices[start:] + self.choices[:start]
        found = next((c for c in ordered if c.lower().startswith(char.lower())), None)
        if found is not None:
            event.stop()
            event.prevent_default()
            self.value = found


class FlagInput(Input):
    """A number field; up/down leave for the previous/next field."""

    BINDINGS = [
        Binding("up", "app.focus_previous", "Previous field", show=False),
        Binding("down", "app.focus_next", "Next field", show=False),
    ]


def _number_ok(value_type: str) -> Callable[[str], bool]:
    def check(text: str) -> bool:
        if not text.strip():
            return True
        try:
            (int if value_type == "int" else float)(text)
        except ValueError:
            return False
        return True

    return check


def _field_id(name: str) -> str:
    return "flag-" + name


def render_diff(changes: list[FlagChange]) -> Text:
    if not changes:
        return Text("no changes against the running server", style="dim")
    out = Text()
    for change in changes:
        if change.kind == "added":
            out.append(f"+ --{change.flag} {change.after}\n", style="green")
        elif change.kind == "removed":
            out.append(f"- --{change.flag} {change.before}\n", style="red")
        else:
            out.append(f"~ --{change.flag} ", style="yellow")
            out.append(f"{change.before} → {change.after}\n")
    out.rstrip()
    return out


class FlagsEditor(ModalScreen[FlagsEditorResult | None]):
    """Edit flags; Save returns a FlagsEditorResult, Escape/Cancel returns None."""

    DEFAULT_CSS = """
    FlagsEditor { align: center middle; }
    FlagsEditor > #dialog {
        width: 96; max-width: 100%; height: 90%; border: thick $accent; background: $surface;
        padding: 0 1;
    }
    FlagsEditor #fields { height: 1fr; }
    FlagsEditor .row { height: auto; }
    FlagsEditor .row Label { width: 30; padding: 1 1 0 0; }
    FlagsEditor .row Select, FlagsEditor .row Input { width: 1fr; }
    FlagsEditor #fields { min-height: 3; }
    FlagsEditor #diff { height: auto; max-height: 8; border: round $panel; }
    FlagsEditor #messages { height: auto; max-height: 4; overflow-y: auto; color: $error; }
    FlagsEditor #buttons { height: auto; align-horizontal: right; }
    FlagsEditor.-short .row Label { padding: 0 1 0 0; }
    FlagsEditor.-short #diff { max-height: 4; }
    FlagsEditor.-short #messages { max-height: 2; }
    FlagsEditor.-short #buttons Button { margin-left: 2; }
    """

    BINDINGS = [
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+r", "restart", "Restart with these flags", priority=True),
        Binding("ctrl+s", "save", "Save as profile", priority=True),
        Binding("ctrl+n", "name", "Profile name", priority=True),
    ]

    def __init__(
        self,
        base_name: str,
        profile: ServerProfile,
        schema: FlagSchema,
        running_flags: Mapping[str, str] | None = None,
        *,
        existing_names: frozenset[str] = frozenset(),
        restart_blocked: str | None = None,
        existing: Mapping[str, ServerProfile] | None = None,
        name_problem: Callable[[str], str | None] | None = None,
        name_stem: str | None = None,
        name: str | None = None,
        note: str = "",
    ) -> None:
        super().__init__()
        self.base_name = base_name
        self.base = profile
        self.schema = schema
        self.fields: list[EditableFlag] = editable_flags(schema)
        self.running = dict(running_flags) if running_flags is not None else None
        self.existing_names = existing_names | frozenset(existing or {})
        # The other profiles: flags that are one of them name it (issue 26.10: a restart
        # with triton's flags was called "cutlass-moe-2" while triton-moe existed).
        self.existing = dict(existing or {})
        # What the save refuses in a name, and the base's name as one it accepts (a Why A/B's
        # "cutlass-moe+cuda-graph-ceiling" has a "+"): suggestions are always saveable.
        self.name_problem = name_problem or (lambda _name: None)
        self.name_stem = name_stem or base_name
        self._suggested = ""
        self._initial_name = name
        self.note = note  # why the editor is open again (a save that failed)
        self.restart_blocked = restart_blocked
        self._profile: ServerProfile | None = profile
        self._report: ValidationReport | None = None
        self._errors: list[str] = []

    def compose(self) -> ComposeResult:
        current = effective_flags(self.base, self.schema)
        with Vertical(id="dialog"):
            yield Label(Text(f"Flags · based on {self.base_name}", style="bold"))
            with VerticalScroll(id="fields"):
                for field in self.fields:
                    with Horizontal(classes="row"):
                        yield Label(f"--{field.name}")
                        value = current.get(field.name)
                        if field.kind == "select":
                            yield FlagSelect(
                                tuple(field.choices),
                                value=value if value in field.choices else Select.NULL,
                                prompt="(server default)",
                                allow_blank=True,
                                id=_field_id(field.name),
                            )
                        else:
                            yield FlagInput(
                                value=value or "",
                                placeholder=f"(server default) {field.value_type}",
                                validators=[Function(_number_ok(field.value_type),
                                                     f"not {field.value_type}")],
                                id=_field_id(field.name),
                            )
                with Horizontal(classes="row"):
                    yield Label("extra args")
                    yield Input(
                        value=" ".join(_quote(a) for a in self.base.extra_args),
                        placeholder="--flag value ...",
                        id="extra-args",
                    )
            yield Static(id="diff")
            yield Static(id="messages")
            with Horizontal(classes="row"):
                yield Label("save as (ctrl+n)")
                self._suggested = self._suggest_name()
                yield Input(value=self._initial_name or self._suggested, id="profile-name")
            with Horizontal(id="buttons"):
                # Labels that fit side by side in an 80-column terminal (issue 26.4).
                yield Button("Cancel (esc)", id="cancel")
                yield Button("Save as profile (ctrl+s)", id="save")
                yield Button("Restart now (ctrl+r)", id="restart", variant="primary",
                             tooltip="Restart the server with these flags (asks first)")

    def _suggest_name(self, profile: ServerProfile | None = None) -> str:
        """The profile these flags already are, else `<base>-N`."""
        if profile is not None:
            same = [n for n, p in self.existing.items() if n != self.base_name
                    and _same_launch(p, profile, self.schema)]
            if same:
                return same[0]
        for n in range(2, 100):
            candidate = f"{self.name_stem}-{n}"
            if candidate not in self.existing_names and self.name_problem(candidate) is None:
                return candidate
        return f"{self.name_stem}-new"

    def on_resize(self) -> None:
        self._fit()

    def _fit(self) -> None:
        """On a short terminal every field and button is one line, so the fields, the diff and
        the three buttons all show at 80x24."""
        short = self.app.size.height < SHORT_ROWS
        self.set_class(short, "-short")
        for widget in self.query("Select, Input, Button"):
            widget.compact = short  # type: ignore[attr-defined]

    def on_mount(self) -> None:
        self._fit()
        self._refresh()
        fields = self.query("#fields Select, #fields Input")
        if fields:
            fields.first().focus()  # the first flag: changing it is one key away

    @on(Select.Changed)
    @on(Input.Changed)
    def _changed(self) -> None:
        self._refresh()

    def _values(self) -> tuple[dict[str, str | None], dict[str, str], str]:
        selects: dict[str, str | None] = {}
        numbers: dict[str, str] = {}
        for field in self.fields:
            if field.kind == "select":
                value = self.query_one(f"#{_field_id(field.name)}", Select).value
                selects[field.name] = value if isinstance(value, str) else None
            else:
                numbers[field.name] = self.query_one(f"#{_field_id(field.name)}", Input).value
        return selects, numbers, self.query_one("#extra-args", Input).value

    def _refresh(self) -> None:
        if not self.is_mounted:
            return
        selects, numbers, extra = self._values()
        profile, report, errors = build_profile(
            self.base, selects, numbers, extra, self.schema, self.fields
        )
        self._profile, self._report, self._errors = profile, report, errors
        before = self.running if self.running is not None else effective_flags(self.base,
                                                                              self.schema)
        after = effective_flags(profile, self.schema) if profile else before
        self.query_one("#diff", Static).update(render_diff(diff_flags(before, after)))
        messages = [self.note, *errors] if self.note else list(errors)
        name_input = self.query_one("#profile-name", Input)
        if profile is not None and name_input.value.strip() == self._suggested:
            # The name follows the change until the operator types one of their own.
            self._suggested = self._suggest_name(profile)
            if name_input.value != self._suggested:
                with name_input.prevent(Input.Changed):
                    name_input.value = self._suggested
        name = name_input.value.strip()
        if not name:
            messages.append("give the new profile a name")
        elif (problem := self.name_problem(name)) is not None:
            messages.append(f"cannot save: {problem} (ctrl+n: the name)")
        elif name in self.existing_names:
            messages.append(f"saving replaces the profile {name!r} (you will be asked)")
        if report is not None:
            messages += [str(i) for i in report.issues]
        self.query_one("#messages", Static).update(Text(sanitize("\n".join(messages))))
        blocked = bool(self._blocking(name, "restart"))
        self.query_one("#save", Button).disabled = bool(self._blocking(name, "save"))
        self.query_one("#restart", Button).disabled = blocked or self.restart_blocked is not None

    def _blocking(self, name: str, action: Literal["restart", "save"]) -> list[str]:
        problems = list(self._errors)
        if not name:
            problems.append("name")
        elif action == "save" and (problem := self.name_problem(name)) is not None:
            # A restart keeps the profile for this run only, under any name (a Why A/B's
            # "base+cause" runs so); a saved one must be a file name the save accepts.
            problems.append(problem)
        if self._report is not None and not self._report.ok:
            problems.append("invalid")
        return problems

    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#cancel")
    def _cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#save")
    def _save_pressed(self) -> None:
        self.action_save()

    @on(Button.Pressed, "#restart")
    def _restart_pressed(self) -> None:
        self.action_restart()

    def action_save(self) -> None:
        self._finish("save")

    def action_name(self) -> None:
        self.query_one("#profile-name", Input).focus()

    def action_restart(self) -> None:
        if self.restart_blocked is not None:
            self.notify(f"Restart: {self.restart_blocked}", severity="warning", markup=False)
            return
        self._finish("restart")

    def _finish(self, action: Literal["restart", "save"]) -> None:
        self._refresh()
        name = self.query_one("#profile-name", Input).value.strip()
        problems = self._blocking(name, action)
        if problems or self._profile is None:
            self.notify("fix the flags first: " + ", ".join(problems or ["invalid"]),
                        severity="warning", markup=False)
            return
        before = self.running if self.running is not None else effective_flags(self.base,
                                                                              self.schema)
        changes = tuple(diff_flags(before, effective_flags(self._profile, self.schema)))
        warnings = tuple(str(i) for i in (self._report.warnings if self._report else []))
        profile = self._profile
        if name in self.existing and _same_launch(self.existing[name], profile, self.schema):
            profile = self.existing[name]  # that profile, its own description and all
        elif changes and (edits := diff_flags(effective_flags(self.base, self.schema),
                                              effective_flags(profile, self.schema))):
            # (none against the base: an edit reopened after a failed save keeps its own)
            profile = profile.model_copy(update={"description": _described(self.base_name,
                                                                            edits)})
        self.dismiss(FlagsEditorResult(name, profile, changes, warnings, action))


def _same_launch(a: ServerProfile, b: ServerProfile, schema: FlagSchema) -> bool:
    """The same server: command, model, effective flags, extra args and env."""
    return (a.launch == b.launch and a.model_path == b.model_path
            and effective_flags(a, schema) == effective_flags(b, schema)
            and a.extra_args == b.extra_args and a.env == b.env)


def _described(base: str, changes: list[FlagChange]) -> str:
    """A changed profile's description says what it is, not the base's ("CUTLASS" on a
    Triton profile, issue 26.10)."""
    said = ", ".join(f"--{c.flag} {c.after}" if c.kind != "removed" else f"no --{c.flag}"
                     for c in changes)
    return f"{base} with {said}"[:200] if said else base


def _quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)
