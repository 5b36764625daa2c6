"""The console's top line: host, SGLang version, profile, server state and uptime."""

from __future__ import annotations

from dataclasses import dataclass, replace

from textual.content import Content
from textual.widgets import Static

_STATE_STYLE = {
    "ready": "$state-ready",
    "starting": "$state-starting",
    "stopping": "$state-starting",
    "failed": "$state-failed",
}
_CONNECTION_STYLE = {
    "lost": "$state-failed",
    "failed": "$state-failed",
    "reconnecting": "$state-starting",
    "connecting": "$state-starting",
}


@dataclass(frozen=True)
class HeaderInfo:
    host: str
    host_index: int = 0
    host_count: int = 1
    connection: str = "connecting"
    version: str | None = None
    engine: str = "sglang"  # the server's engine, as the console names it (console/engines/)
    profile: str | None = None
    profile_edited: bool = False  # this run's profile of that name runs other flags than saved
    server_state: str = "unknown"
    uptime_s: float | None = None
    sweep: str = ""
    replay: str = ""  # "REPLAY of <when>": a recording, never a live host
    effective: str = ""  # "max running 128→50": what the server runs with other than asked


def format_uptime(seconds: float | None) -> str:
    if seconds is None:
        return ""
    total = int(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours >= 100:
        return f"{hours // 24}d{hours % 24:02d}h"
    return f"{hours:02d}:{minutes:02d}:{secs:02d}"


class PlateauHeader(Static):
    """One line; updated in place, only when its text changes."""

    DEFAULT_CSS = """
    PlateauHeader {
        height: 1;
        width: 1fr;
        background: $panel;
        color: $foreground;
        padding: 0 1;
    }
    """

    def __init__(self, *, ascii_only: bool = False, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.ascii_only = ascii_only
        self._last: HeaderInfo | None = None

    def show(self, info: HeaderInfo) -> None:
        if info == self._last:
            return
        self._last = info
        self.update(self.fitted(info))

    def on_resize(self) -> None:
        if self._last is not None:
            self.update(self.fitted(self._last))

    def fitted(self, info: HeaderInfo) -> Content:
        """The line, leaving out the profile, then requested → effective, then the version,
        when it would be cut: the replay marker, host, server state and uptime are what the
        line is for."""
        width = self.content_size.width
        line = self.build(info)
        for leave_out in ({"profile": None}, {"profile": None, "effective": ""},
                          {"profile": None, "effective": "", "version": ""}):
            if width <= 0 or line.cell_length <= width:
                break
            line = self.build(replace(info, **leave_out))
        return line

    def build(self, info: HeaderInfo) -> Content:
        sep = " | " if self.ascii_only else " · "
        parts: list[Content] = [Content.from_markup("[b]host[/b] $host", host=info.host)]
        if info.replay:
            parts.insert(0, Content.from_markup("[b reverse $warning] $r [/]", r=info.replay))
        if info.host_count > 1:
            parts[0] = parts[0] + Content(f" ({info.host_index + 1}/{info.host_count})")
        if info.connection != "connected":
            style = _CONNECTION_STYLE.get(info.connection, "$foreground-muted")
            parts.append(Content.from_markup(f"[{style}]$c[/]", c=info.connection.upper()))
        if info.version != "":  # "": left out to fit (fitted)
            parts.append(Content.from_markup("$e $v", e=info.engine, v=info.version or "?"))
        if info.profile:
            edited = " [$warning](edited)[/]" if info.profile_edited else ""
            parts.append(Content.from_markup(f'profile "$p"{edited}', p=info.profile))
        if info.effective:
            parts.append(Content.from_markup("[$warning]$e[/]", e=info.effective))
        style = _STATE_STYLE.get(info.server_state, "$foreground-muted")
        state = Content.from_markup(f"[b {style}]$s[/]", s=info.server_state.upper())
        uptime = format_uptime(info.uptime_s)
        if uptime:
            state = state + Content(f" {uptime}")
        parts.append(state)
        if info.sweep:
            parts.append(Content.from_markup("[$accent]$s[/]", s=info.sweep))
        return Content(sep).join(parts)
