"""Requested → effective as data: each setting SGLang resolved or clamped at startup, read from
its startup lines (console/sglang/effective.py reads the effective side; the requested side is
the `server_args=` line's, or the "reduced from the requested N" line's). One reading for
`plateau diagnose --log`, logscan and the console's header and Why view."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from console.sglang.effective import describe, read_effective, requested_vs_effective
from console.sglang.prefix import parse_prefix
from console.sglang.server_args import (
    decode_graph_ceiling,
    parse_server_args,
    requested_running_per_rank,
)

# What a startup line must hold to matter here (a cheap test before any regex): the scheduler's
# resolved values, the capture lines (every wording), the clamp line, server_args.
MARKERS = ("max_total_num_tokens=", "apture", "was reduced from the requested", "server_args=")

SHORT_NAMES = {
    "max-running-requests": "max running",
    "chunked-prefill-size": "chunked prefill",
    "max-prefill-tokens": "max prefill",
    "cuda-graph-max-bs-decode": "graph max bs",
    "cuda-graph-max-bs": "graph max bs",
}


def is_startup_line(line: str) -> bool:
    return any(marker in line for marker in MARKERS)


@dataclass(frozen=True)
class Resolved:
    """One setting the server runs with other than asked. `requested` None: SGLang chose it
    (unset flag), or the log does not hold the request (`request_known` False)."""

    flag: str
    requested: Any
    effective: int
    request_known: bool = True
    why: str = ""

    @property
    def clamped(self) -> bool:
        """An explicit request the server did not honour (what the header shows)."""
        return self.request_known and self.requested is not None

    def text(self) -> str:
        """`--max-running-requests 128 → 50` (the diagnose/Why wording)."""
        if not self.request_known:
            return f"--{self.flag} {self.effective} (effective; the request is not in this log)"
        return describe(self.flag, self.requested, self.effective) + self.why

    def short(self) -> str:
        """`max running 128→50` (the header's)."""
        return f"{SHORT_NAMES.get(self.flag, self.flag)} {self.requested}\u2192{self.effective}"


def resolved_settings(startup: Iterable[str], reduced_from: int | None = None
                      ) -> list[Resolved]:
    """What SGLang resolved or clamped, from its startup lines (the last startup's values
    win); `reduced_from`: a request for max running the caller knows from elsewhere."""
    lines = list(startup)
    effective = read_effective(lines)
    args: dict[str, Any] | None = None
    for line in lines:
        message = parse_prefix(line).message
        if message.startswith("server_args="):
            args = parse_server_args(message) or args
    if args is None:
        out = [Resolved(flag, None, value, request_known=False)
               for flag, (_asked, value) in requested_vs_effective({}, effective).items()]
    else:
        asked = {"max-running-requests": requested_running_per_rank(args),
                 "chunked-prefill-size": args.get("chunked_prefill_size"),
                 "max-prefill-tokens": args.get("max_prefill_tokens"),
                 "cuda-graph-max-bs-decode": decode_graph_ceiling(args)}
        out = [Resolved(flag, req, value)
               for flag, (req, value) in requested_vs_effective(asked, effective).items()]
    requested = effective.running_reduced_from or reduced_from
    cap = effective.max_running_requests
    if requested and cap is not None and requested != cap:
        out = [o for o in out if o.flag != "max-running-requests"]
        why = (" (SGLang: reduced to fit the KV cache)" if effective.running_reduced_from
               else "")
        out.insert(0, Resolved("max-running-requests", requested, cap, why=why))
    return out


def header_text(resolved: Iterable[Resolved]) -> str:
    """`max running 128→50, graph max bs 8→1`: the explicit requests not honoured."""
    return ", ".join(r.short() for r in resolved if r.clamped)
