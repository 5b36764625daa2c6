"""Every key binding of the console, each with an id so `[keymap]` in the config can remap it.

Keys that terminals or tmux often swallow (`?`, `ctrl+p`, `[`/`]`) get a second key. The ids are
what `[keymap]` uses: `restart = "f5"` rebinds restart; several keys are comma-separated.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding


@dataclass(frozen=True)
class ActionSpec:
    id: str
    keys: str
    action: str
    description: str
    help: str
    show: bool = True
    key_display: str | None = None


ACTIONS: tuple[ActionSpec, ...] = (
    ActionSpec("restart", "r", "restart", "Restart", "Restart the server (not during a sweep)"),
    ActionSpec("sweep", "s", "sweep", "Sweep", "Run the default sweep preset on this host"),
    ActionSpec(
        "cancel-sweep", "x", "cancel_sweep", "Stop sweep", "Cancel the running sweep or A/B"
    ),
    ActionSpec("flags", "f", "flags", "Flags", "Edit the launch flags of the host's profile"),
    ActionSpec(
        "ab", "a", "ab", "A/B", "Restart into profile A, sweep, into B, sweep, compare"
    ),
    ActionSpec("compare", "c", "show('compare')", "Compare", "Compare two sweep runs"),
    ActionSpec("history", "h", "show('history')", "History", "Sweep history of this host"),
    ActionSpec(
        "why", "W", "show('why')", "Why",
        "Why the newest run plateaus: ranked causes, evidence, a key per fix to A/B (w is the "
        "log's wrap)", False,
    ),
    ActionSpec(
        "tune", "T", "show('tune')", "Tune",
        "Tune: sweep, diagnose, A/B the top cause's fix, keep it only when proved better; "
        "Enter starts, x stops at a safe point (t is topology)", False,
    ),
    ActionSpec("topology", "t", "show('topology')", "Topology", "GPU topology (P2P matrix)"),
    ActionSpec("events", "e", "show('events')", "Events", "Event log: failures and changes"),
    ActionSpec("config", "g", "show('config')", "Config", "Effective config and sources"),
    ActionSpec("dashboard", "d", "show('dashboard')", "Dashboard", "Back to the dashboard"),
    ActionSpec(
        "fleet", "F", "show('fleet')", "Fleet",
        "Every host in one row each: o sorts, / filters, enter opens its dashboard",
    ),
    ActionSpec("filter", "slash", "filter", "Filter", "Filter the log", key_display="/"),
    ActionSpec("toggle-gpus", "1", "toggle('gpus')", "GPUs", "Show/hide the GPU panel", False),
    ActionSpec("toggle-server", "2", "toggle('server')", "Server", "Show/hide server strip", False),
    ActionSpec("toggle-log", "3", "toggle('log')", "Log", "Show/hide the log", False),
    ActionSpec("toggle-sweep", "4", "toggle('sweep')", "Chart", "Show/hide the sweep chart", False),
    ActionSpec(
        "chart-mode", "p", "chart_mode", "Pareto",
        "Sweep chart: tok/s vs concurrency, or per-user vs per-GPU tok/s with the frontier "
        "across this host's stored runs", False,
    ),
    ActionSpec("maximize", "z", "maximize", "Zoom", "Maximise the focused panel (again: restore)"),
    ActionSpec(
        "gpu-metric", "m", "gpu('cycle_metric')", "GPU metric",
        "GPU panel: next history metric (whichever panel has the focus)", False,
    ),
    ActionSpec(
        "gpu-rows", "v", "gpu('toggle_compact')", "GPU rows",
        "GPU panel: compact or full rows (whichever panel has the focus)", False,
    ),
    ActionSpec(
        "next-host", "right_square_bracket,ctrl+n", "next_host(1)", "Next host",
        "Switch to the next host", key_display="]",
    ),
    ActionSpec(
        "prev-host", "left_square_bracket", "next_host(-1)", "Prev host",
        "Switch to the previous host (no ctrl+b: that is tmux's prefix)", False, key_display="[",
    ),
    ActionSpec("hosts", "H", "pick_host", "Hosts", "Pick a host from a list", False),
    ActionSpec(
        "gpu-processes", "K", "gpu_processes", "GPU procs",
        "GPU processes: signal one of yours (confirmed first; never another user's, never "
        "in the demo)", False,
    ),
    ActionSpec("cycle-theme", "ctrl+t", "cycle_theme", "Theme", "Next theme", False),
    ActionSpec(
        "help", "question_mark,f1", "help", "Help", "Keys, thresholds and ids", key_display="?"
    ),
    ActionSpec("palette", "colon", "command_palette", "Palette", "Command palette", False, ":"),
    ActionSpec("quit", "q", "quit", "Quit", "Quit (the server keeps running)"),
)

BY_ID = {spec.id: spec for spec in ACTIONS}

# Irrelevant (not just unavailable) when they cannot act: left out of the footer, not greyed.
HIDDEN_WHEN_UNAVAILABLE = frozenset({"cancel-sweep", "next-host", "prev-host", "hosts"})


def app_bindings() -> list[Binding]:
    return [
        Binding(
            spec.keys,
            spec.action,
            spec.description,
            show=spec.show,
            id=spec.id,
            tooltip=spec.help,
            key_display=spec.key_display,
        )
        for spec in ACTIONS
    ]


def effective_keys(keymap: dict[str, str]) -> dict[str, str]:
    """Binding id -> keys after the config's `[keymap]` overrides."""
    return {spec.id: keymap.get(spec.id, spec.keys) for spec in ACTIONS}


def unknown_keymap_ids(keymap: dict[str, str]) -> list[str]:
    return sorted(set(keymap) - set(BY_ID))
