"""The Tune view (`T`): `plateau tune` in the console, one job with the CLI
(console.jobs.tune via console.session.tune_control). Enter tunes the host's profile; the ladder
grows live (step, cause, change, the verdict's delta and interval at the knee, outcome,
cumulative gain, restarts and minutes used) under the current phase; `x` stops at the next safe
point with the last good profile left running. Enter and `x` go up as the intents
TuneRequested and TuneStopRequested (console/app/intents.py handles them).

Refused, with the reason, as the A/B is (PlateauApp.unavailable_reason "tune"): while a sweep,
A/B or another tune runs, the server is starting or stopping, the host is not connected, or
the session is a replay.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from console.app.contract import console_app
from console.app.messages import TuneRequested, TuneStopRequested
from console.app.screens.views import HostScreen
from console.jobs.tune_models import TuneState
from console.jobs.tune_objective import objective
from console.session.state import HostState, current_profile
from console.session.tune_control import (
    TuneControl,
    control_of,
    tune_objectives,
    tune_preset,
    tune_request,
)
from widgets.table_fill import fill_table


def status_lines(control: TuneControl, profile: str | None, preset: str) -> list[str]:
    """The view's head: what runs (or ran), its phase, and the totals so far."""
    state = control.state
    goal = objective(control.objective).label
    if state is None:
        what = profile or "the host's profile"
        return [f"no tune yet on {control.host} · objective {goal} (o: change)",
                f"Enter: tune {what} (preset {preset}): sweep, diagnose, A/B the top "
                "cause's fix, keep it only on a real 'better'"]
    r = state.request
    word = ("stopping" if control.stopping else "running" if control.running
            else "failed" if control.error else state.status)
    head = (f"tune {control.tune_id or '-'} of {r.profile}: {word} "
            f"\u00b7 {r.preset} \u00b7 {r.metric} \u00b7 A/B x{r.repeats} interleaved")
    phase = control.phase
    if control.running:
        now = f"phase: {phase.stage}: {phase.message}" if phase else "phase: -"
    elif control.error:
        now = f"failed: {control.error}"
    else:
        now = f"{state.status}: {state.stop_reason}"
    lines = [head, now]
    lines.append(f"kept gain {state.gain_pct:+.1f}%  restarts {state.restarts}  "
                 f"minutes {state.minutes:.1f}"
                 + (f"  (resumed {state.resumed}x)" if state.resumed else ""))
    return lines


WIDE_FROM = 110  # columns: the ladder's long form from here (120x40), the short one below


def _ellipsized(text: str, width: int) -> str:
    return text if len(text) <= width else text[:max(1, width - 1)] + "\u2026"


def ladder_table(state: TuneState | None, width: int) -> tuple[list[str], list[list[str]]]:
    """The ladder for a screen `width` columns wide: every column the CLI prints, the change
    ellipsized to what is left (the notes below give every reason in full); below WIDE_FROM
    the verdict drops its levels (the head names them) and restarts/minutes share a column.
    `*` marks a step whose A/B ran again after a stop or a kill (the legend says so)."""
    wide = width >= WIDE_FROM
    labels = (["#", "cause", "change", "verdict (knee)", "outcome", "gain", "restarts", "min"]
              if wide else ["#", "cause", "change", "\u0394 at knee", "outcome", "gain",
                            "r/min"])
    rows: list[list[str]] = []
    for r in state.ladder if state is not None else []:
        verdict = "-"
        if r.delta_pct is not None and r.half_width_pct is not None:
            verdict = f"{r.delta_pct:+.1f}\u00b1{r.half_width_pct:.1f}%"
            if wide:
                verdict += f" at {','.join(map(str, r.levels))}"
        outcome = r.outcome + ("*" if r.resumed else "")
        gain = f"{r.cumulative_pct:+.1f}%"
        tail = ([str(r.restarts), f"{r.minutes:.1f}"] if wide
                else [f"{r.restarts}/{r.minutes:.1f}"])
        rows.append([str(r.step), _ellipsized(r.cause, 18 if wide else 14), r.change, verdict,
                     outcome, gain, *tail])
    change_at = 2
    others = sum(max([len(labels[i]), *(len(row[i]) for row in rows)])
                 for i in range(len(labels)) if i != change_at)
    room = max(10, width - others - 2 * len(labels) - 4)  # cell padding, scrollbar, margin
    for row in rows:
        row[change_at] = _ellipsized(row[change_at], room)
    return labels, rows


def detail_lines(control: TuneControl) -> list[str]:
    """Below the ladder: why steps were not kept, notes, how it ended, what was saved."""
    state: TuneState | None = control.state
    if state is None:
        return []
    out = [f"step {r.step} {r.outcome}: {r.reason}" for r in state.ladder
           if r.outcome != "kept"]
    if any(r.resumed for r in state.ladder):
        out.append("* resumed: the tune was stopped or killed during this A/B, which ran "
                   "again from its first pass")
    out += [f"note: {n}" for n in state.notes]
    if control.saved:
        out.append(f"saved the tuned profile to {control.saved}")
    if control.running:
        out.append("x: stop at the next safe point (the last good profile keeps running)")
    else:
        out.append(f"Enter: tune again (from the host's profile) for "
                   f"{objective(control.objective).label}; o: change the objective")
    return out


class TuneScreen(HostScreen):
    TITLE_TEXT = "Tune: diagnose, A/B the fix, keep only what is proved better"
    # The view's own keys lead the footer, as the fleet's do: behind the app's ~12 they had no
    # room at 120 columns, and Enter / o / x were said only in the notes below the ladder.
    footer_own_keys_first = True
    BINDINGS = [
        Binding("enter", "start_tune", "Tune", id="tune-start"),
        Binding("o", "cycle_objective", "Objective", id="tune-objective"),
        Binding("x", "stop_tune", "Stop tune", id="tune-stop"),
    ]

    def compose_body(self) -> ComposeResult:
        yield Static("", id="tune-status", markup=False)
        table: DataTable[Text] = DataTable(id="tune-ladder", cursor_type="none", zebra_stripes=True)
        table.can_focus = False  # Enter starts a tune; the ladder has nothing to select
        yield table
        with VerticalScroll(id="tune-notes-scroll"):
            yield Static("", id="tune-notes", markup=False)

    def on_unmount(self) -> None:
        for control in console_app(self).tunes.values():
            if isinstance(control, TuneControl) and self._changed in control.listeners:
                control.listeners.remove(self._changed)

    def control(self) -> TuneControl:
        app = console_app(self)
        control = control_of(app.tunes, app.active_host)
        if self._changed not in control.listeners:
            control.listeners.append(self._changed)
        return control

    def _changed(self) -> None:
        if self.is_mounted:
            self.render_tune()

    def on_resize(self) -> None:
        if self.is_mounted:
            self.render_tune()

    def render_body(self, state: HostState, aspects: tuple[str, ...] | None) -> None:
        if aspects is None or "server" in aspects or "connection" in aspects:
            self.render_tune()

    def render_tune(self) -> None:
        app = console_app(self)
        control = self.control()
        session = app.sessions[app.active_host]
        profile = current_profile(session.state, session.host)
        preset = tune_preset(app.config)
        self.query_one("#tune-status", Static).update(
            Text("\n".join(status_lines(control, profile, preset))))
        labels, rows = ladder_table(control.state, self.size.width or WIDE_FROM)
        fill_table(self.query_one("#tune-ladder", DataTable), labels,
                   [[Text(cell) for cell in r] for r in rows])
        self.query_one("#tune-notes", Static).update(Text("\n".join(detail_lines(control))))

    def action_start_tune(self) -> None:
        app = console_app(self)
        why = app.unavailable_reason("tune")
        if why is not None:
            self.notify(f"Tune: {why}", severity="warning", markup=False)
            return
        session = app.sessions[app.active_host]
        profile = current_profile(session.state, session.host)
        if profile is None or profile not in app.config.profiles:
            self.notify(f"Tune: no known profile runs on {session.host.name}",
                        severity="warning", markup=False)
            return
        request = tune_request(app.config, session.host.name, profile, self.control().objective)
        self.post_message(TuneRequested(session.host.name, request))

    def action_cycle_objective(self) -> None:
        """`o`: what the next tune raises (goodput offered when the preset has an SLO)."""
        control = self.control()
        if control.running:
            self.notify("Objective: a tune is running (x stops it)", severity="warning",
                        markup=False)
            return
        chosen = control.next_objective(tune_objectives(console_app(self).config))
        self.notify(f"Tune objective: {objective(chosen).label}", markup=False)

    def action_stop_tune(self) -> None:
        self.post_message(TuneStopRequested(console_app(self).active_host))


__all__ = ["TuneScreen", "control_of", "detail_lines", "ladder_table", "status_lines"]
