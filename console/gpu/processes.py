"""GPU processes the operator may signal, and the signal itself (nvitop's rule: confirm first;
ours too: only the operator's own processes, never on a simulated host's behalf).

"The operator" on a host is the user the GPU agent runs as there (its header's `host.uid`):
the same login that would send the signal. A process counts as the operator's only when the
agent saw its owner and it is that uid; unknown is not mine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from console.errors import PlateauError
from console.gpu.models import GpuHeader, GpuProcess, GpuSample
from console.host.transport import Transport
from console.text import sanitize

SIGNALS = ("TERM", "INT", "KILL")
_SIGNAL = re.compile(r"^[A-Z]{2,8}$")


class ProcessSignalError(PlateauError):
    """A signal that was refused (not yours, a simulated host) or that the host rejected."""


@dataclass(frozen=True)
class GpuProcessRow:
    """One process on one GPU, with the verdict on signalling it."""

    gpu: int
    process: GpuProcess
    refusal: str | None  # why it cannot be signalled; None: the operator's own

    @property
    def label(self) -> str:
        p = self.process
        used = "N/A" if p.used_mib is None else f"{p.used_mib / 1024:.1f}G"
        user = p.user or (str(p.uid) if p.uid is not None else "N/A")
        command = sanitize(p.cmd or p.name or "N/A")
        return f"GPU{self.gpu}  pid {p.pid:<8} {sanitize(user)[:12]:<12} {used:>7}  {command}"


def refusal(process: GpuProcess, header: GpuHeader | None, *, simulated: bool) -> str | None:
    """Why `process` may not be signalled from this console, or None when it may."""
    if simulated:
        return "a simulated host: the demo never signals processes"
    operator = header.host.uid if header is not None else None
    if operator is None:
        return "the agent did not say which user it runs as"
    if process.uid is None:
        return "its owner is not visible to the agent"
    if process.uid != operator:
        owner = process.user or str(process.uid)
        me = header.host.user if header is not None and header.host.user else str(operator)
        return f"owned by {owner}, not {me}"
    if process.pid <= 1:
        return "not a process to signal"
    return None


def process_rows(
    sample: GpuSample | None, header: GpuHeader | None, *, simulated: bool
) -> list[GpuProcessRow]:
    """Every GPU's processes (a process on several GPUs once per GPU), own ones first."""
    rows = [
        GpuProcessRow(g.index, p, refusal(p, header, simulated=simulated))
        for g in (sample.gpus if sample is not None else [])
        for p in g.processes or []
    ]
    return sorted(rows, key=lambda r: (r.refusal is not None, r.gpu, r.process.pid))


def kill_argv(pid: int, signal_name: str = "TERM") -> list[str]:
    """`kill -TERM -- PID` as an argv list (no shell parses it); one process, never a group."""
    name = signal_name.upper().removeprefix("SIG")
    if name not in SIGNALS or not _SIGNAL.match(name):
        raise ValueError(f"signal not offered: {signal_name!r}")
    if int(pid) <= 1:
        raise ValueError(f"refusing to signal pid {pid}")
    return ["kill", f"-{name}", "--", str(int(pid))]


async def send_signal(
    transport: Transport,
    row: GpuProcessRow,
    signal_name: str = "TERM",
) -> str:
    """Signal the row's process on the host; a one-line outcome. Refused rows raise before
    anything is sent; so does a host that says no (the process is gone, not permitted)."""
    if row.refusal is not None:
        raise ProcessSignalError(f"pid {row.process.pid}: {row.refusal}")
    result = await transport.run(kill_argv(row.process.pid, signal_name), timeout=10)
    if not result.ok:
        lines = (result.stderr or result.stdout).strip().splitlines()
        detail = sanitize(lines[-1]) if lines else ""
        raise ProcessSignalError(
            f"{transport.host_name}: kill -{signal_name} {row.process.pid} failed"
            + (f": {detail}" if detail else f" (exit {result.exit_status})")
        )
    return f"{transport.host_name}: sent SIG{signal_name} to pid {row.process.pid}"
