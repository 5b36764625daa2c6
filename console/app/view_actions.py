"""Keys that change what is on screen, not the host: the screens (`d`, `h`, `T`…), the
dashboard's panels (`1`-`4`, `z`, `/`, `p`, the GPU panel's `m` / `v` wherever the focus is),
the theme (`ctrl+t`) and the help (`?`)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from console.app.base import ConsoleBase
from console.app.bindings import ACTIONS
from console.app.bindings import effective_keys as keys_after_keymap
from console.app.modes import SCREENS
from widgets.log_view import LogView

if TYPE_CHECKING:  # the help panel is imported when `?` first opens it
    from widgets.help_panel import HelpRow


class ViewActions(ConsoleBase):
    def action_show(self, name: str) -> None:
        if name in SCREENS:
            self.switch_mode(name)

    async def action_toggle(self, panel: str) -> None:  # DOMNode.action_toggle is async
        screen = self.get_screen_dashboard()
        if screen is None:
            return
        if screen.toggle_panel(panel):
            self.hidden_panels.discard(panel)
        else:
            self.hidden_panels.add(panel)

    def action_gpu(self, method: str) -> None:
        """`m` / `v`: the GPU panel's own actions, whichever panel has the focus."""
        screen = self.get_screen_dashboard()
        action = getattr(screen.gpu_view, f"action_{method}", None) if screen else None
        if not callable(action):
            spec = next(s for s in ACTIONS if s.action == f"gpu('{method}')")
            self.notify(f"{spec.description}: the GPU panel is on the dashboard (d)",
                        severity="warning", markup=False)
            return
        action()

    async def action_chart_mode(self) -> None:
        """`p`: the sweep chart's Pareto view and back; the frontier spans the host's runs."""
        screen = self.get_screen_dashboard()
        chart = screen.sweep_view if screen is not None else None
        if chart is None:
            self.notify("Pareto: the sweep chart is on the dashboard (d)", severity="warning",
                        markup=False)
            return
        if chart.cycle_mode() == "pareto":
            from console.app import views_data  # with the first use, as the A/B picker does

            chart.set_history(await asyncio.to_thread(
                views_data.pareto_history, self.store_path, self.active_host))

    def action_maximize(self) -> None:
        screen = self.get_screen_dashboard()
        if screen is not None:
            screen.toggle_maximize()

    def action_filter(self) -> None:
        screen = self.get_screen_dashboard()
        if screen is None:
            self.switch_mode("dashboard")
            return
        screen.focus_log()

    def use_theme(self, name: str) -> None:
        self.theme = name

    def action_cycle_theme(self) -> None:
        names = self.plateau_theme_names
        index = names.index(self.theme) if self.theme in names else -1
        self.theme = names[(index + 1) % len(names)]
        self.notify(f"theme: {self.theme}", markup=False, timeout=2)

    def effective_keys(self) -> dict[str, str]:
        return keys_after_keymap(dict(self.keymap))

    def action_help(self) -> None:
        from console.app.screens.modals import HelpScreen
        from widgets.help_panel import HelpRow, Thresholds

        keys = self.effective_keys()
        rows = [HelpRow(spec.id, keys[spec.id], spec.help) for spec in ACTIONS]
        ui = self.config.ui
        self.push_screen(
            HelpScreen(
                rows, Thresholds(ui.gpu_load_mid, ui.gpu_load_high, ui.gpu_interval_s,
                                 ui.log_max_lines),
                sections=[("Log (when it has the focus: tab moves it, / goes there)",
                           widget_help_rows(LogView.BINDINGS))],
            )
        )


def widget_help_rows(bindings: Sequence[Any]) -> list[HelpRow]:
    """A widget's own keys for `?` (its id, or its action when it has none)."""
    from widgets.help_panel import HelpRow

    return [HelpRow(b.id or b.action, b.key, b.tooltip or b.description) for b in bindings]
