"""One stored run, opened from history: its steps, flags, the console's events while it ran,
and its diagnosis when evidence was stored with it."""

from __future__ import annotations

from datetime import UTC, datetime

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from console.bench.report import STEP_HEADERS, step_cells
from console.session.state import EventRecord
from console.store.models import RunRecord
from widgets.split_table import SplitTables


def events_during(events: list[EventRecord], run: RunRecord) -> list[EventRecord]:
    """The host's event-log lines from the run's start to its end (or now, while running)."""
    start = datetime.fromtimestamp(run.summary.started_at, UTC)
    end_ts = run.summary.finished_at
    end = datetime.fromtimestamp(end_ts, UTC) if end_ts else None
    return [e for e in events if e.at >= start and (end is None or e.at <= end)]


class RunScreen(ModalScreen[None]):
    """`enter` on a history row. Escape closes."""

    BINDINGS = [Binding("escape,q", "dismiss(None)", "Close", id="run-close")]

    def __init__(self, run: RunRecord, events: list[EventRecord], diagnosis: list[str],
                 pair: str = "") -> None:
        super().__init__()
        self.run = run
        self.events = events
        self.diagnosis = diagnosis
        self.pair = pair

    def compose(self) -> ComposeResult:
        summary = self.run.summary
        with VerticalScroll(id="run-box") as box:
            box.border_title = f"run {summary.id}: {self.run.label}"
            started = datetime.fromtimestamp(summary.started_at).strftime("%Y-%m-%d %H:%M:%S")
            head = (f"{summary.status} · started {started} · host {summary.meta.host or '-'} · "
                    f"profile {summary.meta.profile or '-'} · engine {summary.meta.engine}")
            yield Static(Text(head), id="run-head")
            if self.pair:
                yield Static(Text(self.pair), id="run-pair")
            yield Static(Content.styled("steps", "bold"))
            # As many tables as the width needs, conc and rep in each: no column cut.
            yield SplitTables("run-steps", id="run-steps-parts")
            flags = summary.meta.flags
            text = " ".join(f"--{k} {v}" for k, v in flags.items()) if flags else "(none)"
            yield Static(Content.styled("flags", "bold"))
            yield Static(Text(text), id="run-flags")
            yield Static(Content.styled("diagnosis", "bold"))
            yield Static(Text("\n".join(self.diagnosis) or "no diagnosis stored"),
                         id="run-diagnosis")
            yield Static(Content.styled("events while it ran", "bold"))
            lines = [f"{e.at:%H:%M:%S} {e.level:<7} {e.source}: {e.message}" for e in self.events]
            yield Static(Text("\n".join(lines) or "no events recorded by this console"),
                         id="run-events")

    def on_mount(self) -> None:
        self.query_one(SplitTables).show(
            [Text(h) for h in STEP_HEADERS],
            [[Text(c) for c in step_cells(s)] for s in self.run.steps], keys=2)
