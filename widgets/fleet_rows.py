"""One fleet row per HostSummary: the cells, the sort keys and the filter test.

Pure functions of the summary (no Textual), so the screen, the tests and a headless dump agree.
Every cell is a rich Text built from values, never markup: host names, versions, profiles and
reasons are operator or server text.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from rich.text import Text

from console.fleet.models import HostSummary

# (key, label): the most looked-at first, so 80 columns show host, state, alerts and load;
# the rest scroll in from the right.
COLUMNS: tuple[tuple[str, str], ...] = (
    ("host", "host"), ("state", "state"), ("alerts", "alerts"), ("gpus", "GPUs util"),
    ("tok", "gen tok/s"), ("runq", "run/queue"), ("kv", "KV"), ("graph", "graph"),
    ("power", "power"), ("mem", "memory"), ("thr", "throttle/XID"), ("version", "sglang"),
    ("profile", "profile"), ("sweep", "last sweep"), ("knee", "knee"), ("cause", "top cause"),
)

# Short words for the alert ids (a column of full ids would not fit 80 columns).
ALERT_WORDS = {
    "host-unreachable": "unreachable", "server-down": "down", "eager-decode": "eager",
    "kv-pool-full": "kv-full", "gpu-throttled": "throttle", "gpu-xid": "xid",
    "gpu-agent": "gpu-agent",
}
_LEVEL_STYLE = {"error": "bold red", "warning": "yellow"}
NA = "-"


def _si(value: float | None, unit: str = "") -> str:
    if value is None:
        return NA
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= limit:
            return f"{value / limit:.1f}{suffix}{unit}"
    return f"{value:.0f}{unit}"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    minutes = int(seconds // 60)
    if minutes < 60:
        return f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}" if hours < 48 else f"{hours // 24}d"


def level(summary: HostSummary) -> str:
    """error, warning, ok or pending (connecting, no data yet): the row's colour."""
    levels = {a.level for a in summary.alerts}
    if "error" in levels:
        return "error"
    if "warning" in levels:
        return "warning"
    return "ok" if summary.reachable else "pending"


def _state(s: HostSummary) -> Text:
    if not s.reachable:
        style = "bold red" if s.alert("host-unreachable") else "dim"
        return Text(s.connection, style=style)
    server = s.server
    if server.state == "ready":
        return Text(f"ready {_duration(server.uptime_s)}".rstrip(), style="green")
    style = "bold red" if server.state in ("stopped", "failed") else "yellow"
    return Text(server.state, style=style)


ALERTS_WIDTH = 18


def _alerts(s: HostSummary) -> Text:
    """The alerts' words, errors first, as many as fit the column, then `+N`."""
    alerts = sorted(s.alerts, key=lambda a: a.level != "error")
    text = Text()
    for number, alert in enumerate(alerts):
        word = ALERT_WORDS.get(alert.id, alert.id)
        rest = len(alerts) - number - 1
        room = ALERTS_WIDTH - len(text) - (1 if text else 0) - (len(f" +{rest}") if rest else 0)
        if len(word) > room:
            text.append(f"{' ' if text else ''}+{len(alerts) - number}", style="bold")
            break
        text.append(f"{' ' if text else ''}{word}", style=_LEVEL_STYLE[alert.level])
    return text or Text(NA, style="dim")


def _gpus(s: HostSummary) -> str:
    g = s.gpus
    if g is None:
        return NA
    if g.util_mean_pct is None or g.util_max_pct is None:
        return f"{g.count}x"
    return f"{g.count}x {g.util_mean_pct:.0f}/{g.util_max_pct:.0f}%"


def _power(s: HostSummary) -> str:
    g = s.gpus
    if g is None or g.power_w is None:
        return NA
    limit = f"/{_si(g.power_limit_w, 'W')}" if g.power_limit_w else ""
    return f"{_si(g.power_w, 'W')}{limit}"


def _memory(s: HostSummary) -> str:
    g = s.gpus
    if g is None or g.mem_used_mib is None:
        return NA
    used = g.mem_used_mib / 1024
    total = f"/{g.mem_total_mib / 1024:.0f}" if g.mem_total_mib else ""
    return f"{used:.0f}{total}G"


def _throttle(s: HostSummary) -> Text:
    g = s.gpus
    if g is None:
        return Text(NA, style="dim")
    parts = Text()
    if g.throttled:
        parts.append("thr " + ",".join(map(str, g.throttled)), style="yellow")
    if g.xid_count:
        parts.append((" " if parts else "") + f"xid {g.xid_count}", style="bold red")
    return parts or Text("ok", style="dim")


def _tok(s: HostSummary) -> Text:
    load = s.load
    if load is None:
        return Text(NA, style="dim")
    if load.gen_tok_s is None:
        return Text(f"idle ({_si(load.gen_last_tok_s)})" if load.gen_last_tok_s else "idle",
                    style="dim")
    return Text(_si(load.gen_tok_s))


def _runq(s: HostSummary) -> str:
    load = s.load
    if load is None or load.running is None:
        return NA
    queued = f"{load.queued:.0f}" if load.queued is not None else NA
    return f"{load.running:.0f}/{queued}"


def _kv(s: HostSummary) -> Text:
    usage = s.load.token_usage if s.load is not None else None
    if usage is None:
        return Text(NA, style="dim")
    return Text(f"{usage:.2f}", style="yellow" if s.alert("kv-pool-full") else "")


def _graph(s: HostSummary) -> Text:
    graph = s.load.cuda_graph if s.load is not None else None
    if graph is None:
        return Text(NA, style="dim")
    return Text("on") if graph else Text("off", style="yellow")


def _sweep(s: HostSummary) -> str:
    sweep = s.sweep
    if sweep is None:
        return NA
    if sweep.peak_tok_s is None:
        return f"running {sweep.step}/{sweep.total}" if sweep.running else NA
    at = _axis_point(sweep.peak_concurrency, sweep.peak_request_rate)
    return f"{_si(sweep.peak_tok_s)}@{at}"


def _axis_point(concurrency: int | None, rate: float | None) -> str | None:
    """A point on the sweep's axis: a concurrency, or a --request-rate sweep's rate."""
    if rate is not None:
        return "inf req/s" if math.isinf(rate) else f"{rate:g} req/s"
    return None if concurrency is None else str(concurrency)


def _knee(s: HostSummary) -> str:
    """Where the last sweep stopped scaling (console.bench.knee's kinds, in words)."""
    sweep = s.sweep
    if sweep is None or sweep.knee_kind is None:
        return NA
    at = _axis_point(sweep.knee_concurrency, sweep.knee_request_rate)
    if sweep.knee_kind == "scaling":
        return "still rising"
    if sweep.knee_kind == "insufficient" or at is None:
        return "too few steps"
    return f"{'knee' if sweep.knee_kind == 'saturates' else 'falls after'} {at}"


def _plain(value: str | None) -> Text:
    return Text(value or NA, style="" if value else "dim")


_CELLS: dict[str, Callable[[HostSummary], Text | str]] = {
    "state": _state, "alerts": _alerts, "gpus": _gpus, "tok": _tok, "runq": _runq, "kv": _kv,
    "graph": _graph, "power": _power, "mem": _memory, "thr": _throttle,
    "version": lambda s: _plain(s.server.version), "profile": lambda s: _plain(s.server.profile),
    "sweep": _sweep, "knee": _knee,
    "cause": lambda s: _plain(s.sweep.top_cause if s.sweep is not None else None),
}
_MARK = {"error": ("●", "bold red"), "warning": ("●", "yellow"), "ok": ("●", "green"),
         "pending": ("○", "dim")}


def cells(summary: HostSummary, *, ascii_only: bool = False) -> tuple[Text, ...]:
    """The row's cells in COLUMNS order."""
    mark, style = _MARK[level(summary)]
    if ascii_only:
        mark = {"●": "*", "○": "."}[mark]
    host = Text.assemble((mark, style), " ", summary.host)
    out = [host]
    for key, _label in COLUMNS[1:]:
        value = _CELLS[key](summary)
        out.append(value if isinstance(value, Text) else Text(value))
    return tuple(out)


@dataclass(frozen=True)
class SortKey:
    id: str
    label: str
    key: Callable[[HostSummary], tuple[float | str, ...]]


_SEVERITY = {"error": 0, "warning": 1, "pending": 2, "ok": 3}
SORTS: tuple[SortKey, ...] = (
    SortKey("host", "host", lambda s: (s.host,)),
    SortKey("alerts", "alerts first",
            lambda s: (_SEVERITY[level(s)], -len(s.alerts), s.host)),
    SortKey("tok", "gen tok/s", lambda s: (
        -(s.load.gen_tok_s or 0.0) if s.load is not None else 0.0, s.host)),
    SortKey("util", "GPU util", lambda s: (
        -(s.gpus.util_mean_pct or 0.0) if s.gpus is not None else 0.0, s.host)),
    SortKey("kv", "KV usage", lambda s: (
        -(s.load.token_usage or 0.0) if s.load is not None else 0.0, s.host)),
    SortKey("peak", "sweep peak", lambda s: (
        -(s.sweep.peak_tok_s or 0.0) if s.sweep is not None else 0.0, s.host)),
)


def matches(summary: HostSummary, query: str) -> bool:
    """Whether the row shows under the filter: every word of `query` (case-insensitive) is
    in the host name, its state, SGLang version, profile, an alert id or word, or the top
    cause id. `/ eager` keeps the hosts decoding eagerly; `/ gpu-0 ready` the ready gpu-0*."""
    words = query.casefold().split()
    if not words:
        return True
    haystack = " ".join([
        summary.host, summary.connection, summary.server.state, summary.server.version or "",
        summary.server.profile or "", summary.sweep.top_cause or "" if summary.sweep else "",
        *(a.id for a in summary.alerts), *(ALERT_WORDS.get(a.id, "") for a in summary.alerts),
    ]).casefold()
    return all(word in haystack for word in words)
