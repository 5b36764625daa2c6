"""The command palette's provider: every action (with its key and whether it is available now),
hosts, themes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from console.app.bindings import ACTIONS
from console.app.contract import console_app


class PaletteProvider(Provider):
    def _entries(self) -> list[tuple[str, str, Callable[[], object]]]:
        app = console_app(self)
        entries: list[tuple[str, str, Callable[[], object]]] = []
        keys = app.effective_keys()
        for spec in ACTIONS:
            if spec.id == "palette":
                continue
            why = app.unavailable_reason(spec.id)
            label = spec.description if why is None else f"{spec.description} (unavailable: {why})"
            help_text = f"{spec.help}  [{keys.get(spec.id, spec.keys)}]  id={spec.id}"
            entries.append((label, help_text, partial(app.run_action_id, spec.id)))
        for name in app.host_names:
            if name != app.active_host:
                entries.append(
                    (f"Host: {name}", "Switch to this host", partial(app.switch_host, name))
                )
        for name in app.host_names:
            if app.sessions[name].state.host_key is not None:
                entries.append((
                    f"Host key: review {name}'s unknown key",
                    "Accept or refuse the key this host presented (not connected until then)",
                    partial(app.ask_host_key, name),
                ))
        for name in app.plateau_theme_names:
            entries.append((f"Theme: {name}", "Use this theme", partial(app.use_theme, name)))
        return entries

    async def discover(self) -> Hits:
        for label, help_text, callback in self._entries():
            yield DiscoveryHit(label, callback, help=help_text)

    async def search(self, query: str) -> AsyncIterator[Hit]:
        matcher = self.matcher(query)
        for label, help_text, callback in self._entries():
            score = matcher.match(label)
            if score > 0:
                yield Hit(score, matcher.highlight(label), callback, help=help_text)
