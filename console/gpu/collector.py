"""Runs the GPU agent on a host over a Transport and turns its lines into typed events.

    async with GpuCollector(transport, AgentOptions(backend="sim")) as gpus:
        async for event in gpus:          # GpuHeader first, then GpuSample, GpuSample, ...
            ...

Closing the collector (or leaving the `async with`) closes the line stream, which kills the
agent on the host.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from console.errors import PlateauError
from console.gpu.models import (
    AgentError,
    AgentWarning,
    GpuEvent,
    GpuHeader,
    GpuSample,
    Topology,
)
from console.gpu.topology import parse_matrix
from console.host.transport import LineStream, Transport
from console.text import sanitize, sanitize_lines

AGENT_PATH = Path(__file__).with_name("agent.py")
Backend = Literal["auto", "nvml", "smi", "sim"]
PcieMode = Literal["auto", "thread", "gpm", "inline", "off"]


class GpuAgentError(PlateauError):
    """The agent could not run or reported a fatal problem (e.g. no NVIDIA driver)."""

    def __init__(self, message: str, code: str = "error") -> None:
        super().__init__(message)
        self.code = code


@cache
def agent_source() -> str:
    return AGENT_PATH.read_text(encoding="utf-8")


@dataclass(frozen=True)
class AgentOptions:
    backend: Backend = "auto"
    interval: float = 1.0
    count: int = 0  # 0: stream until closed
    pcie: PcieMode = "auto"
    python: str = "python3"  # the host's interpreter (host config: remote python path)
    sim_state: str | None = None
    sim_gpus: int | None = None
    sim_gpu_name: str | None = None
    sim_seed: int | None = None
    extra_args: tuple[str, ...] = field(default_factory=tuple)


def agent_argv(options: AgentOptions | None = None, program: str = str(AGENT_PATH)) -> list[str]:
    """`[python, PROGRAM, args...]`: PROGRAM is the agent's installed copy on the host
    (`transport.install_program`), so `ps` there shows a path, not the source."""
    o = options or AgentOptions()
    argv = [o.python, program, "--backend", o.backend]
    argv += ["--interval", repr(max(0.25, float(o.interval))), "--pcie", o.pcie]
    if o.count:
        argv += ["--count", str(int(o.count))]
    if o.sim_state:
        argv += ["--sim-state", o.sim_state]
    if o.sim_gpus is not None:
        argv += ["--sim-gpus", str(int(o.sim_gpus))]
    if o.sim_gpu_name:
        argv += ["--sim-gpu-name", o.sim_gpu_name]
    if o.sim_seed is not None:
        argv += ["--sim-seed", str(int(o.sim_seed))]
    argv += list(o.extra_args)
    return argv


# ------------------------------------------------------------------------------------------
# Parsing


def parse_line(line: str) -> GpuEvent | None:
    """One agent line -> typed event; None for anything that is not a well-formed event
    (garbage, a partial line, a Python warning on stdout, unknown types)."""
    text = line.strip()
    if not text.startswith("{"):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    return parse_event(data)


def parse_event(data: dict[str, Any]) -> GpuEvent | None:
    kind = data.get("type")
    try:
        if kind == "sample":
            return GpuSample.model_validate(data)
        if kind == "header":
            return parse_header(data)
        if kind == "error":
            return AgentError(
                code=sanitize(str(data.get("code") or "error")),
                message=sanitize(str(data.get("message") or "GPU agent failed")),
            )
        if kind == "warn":
            return AgentWarning(message=sanitize(str(data.get("message") or "")))
    except ValidationError:
        return None
    return None


def parse_header(data: dict[str, Any]) -> GpuHeader:
    data = dict(data)
    topo = data.get("topology")
    data["topology"] = build_topology(topo if isinstance(topo, dict) else {})
    if not isinstance(data.get("nvlink"), list):
        data["nvlink"] = None
    if not isinstance(data.get("host"), dict):
        data["host"] = {}
    if not isinstance(data.get("gpus"), list):
        data["gpus"] = []
    data["gpus"] = [g for g in data["gpus"] if isinstance(g, dict) and "index" in g]
    return GpuHeader.model_validate(data)


def _table(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def build_topology(topo: dict[str, Any]) -> Topology:
    """Structured NVML/sim matrices when present; else parsed from `nvidia-smi topo -m`."""
    smi = _table(topo.get("smi"))
    topo_m = _text(smi.get("topo_m"))
    p2p_text = _text(smi.get("p2p_read"))
    parsed = parse_matrix(topo_m) if topo_m else None
    links = topo.get("links")
    gpus = topo.get("gpus")
    p2p = _table(topo.get("p2p"))
    cpu = topo.get("cpu_affinity")
    numa = topo.get("numa_affinity")
    if not isinstance(links, list) and parsed is not None:
        links, gpus = parsed.cells, parsed.gpus
    if parsed is not None and not isinstance(cpu, list):
        cpu, numa = parsed.cpu_affinity, parsed.numa_affinity
    if "read" not in p2p and p2p_text:
        p2p = {**p2p, "read": parse_matrix(p2p_text).cells}
    named = topo.get("source")
    fallback: Literal["smi", "none"] = "smi" if parsed is not None else "none"
    source: Literal["nvml", "smi", "sim", "none"] = (
        named if named in ("nvml", "smi", "sim") else fallback)
    disagreements: list[str] = []
    if isinstance(links, list) and parsed is not None and parsed.cells:
        links, disagreements = cross_check(links, parsed.cells, parsed.gpus)
    return Topology(
        source=source,
        gpus=[str(g) for g in gpus] if isinstance(gpus, list) else [],
        links=links if isinstance(links, list) else [],
        p2p={k: v for k, v in p2p.items() if isinstance(v, list)},
        cpu_affinity=[c if isinstance(c, str) else None for c in cpu]
        if isinstance(cpu, list)
        else [],
        numa_affinity=[c if isinstance(c, str) else None for c in numa]
        if isinstance(numa, list)
        else [],
        topo_m_text=sanitize_block(topo_m),
        p2p_read_text=sanitize_block(p2p_text),
        smi_checked=parsed is not None and bool(parsed.cells),
        disagreements=disagreements,
    )


def cross_check(
    links: list[Any], smi_cells: list[list[str | None]], smi_gpus: list[str]
) -> tuple[list[Any], list[str]]:
    """NVML's link matrix checked cell by cell against `nvidia-smi topo -m` from the same
    host. Where they differ, nvidia-smi's word wins (it is NVIDIA's own reading of the
    topology: it said NV18 behind NVSwitch while NVML's common-ancestor level said PHB) and
    the difference is listed, so a wrong NVML reading is visible, not silent."""
    out = [list(row) if isinstance(row, list) else row for row in links]
    notes: list[str] = []
    for i, row in enumerate(out):
        if not isinstance(row, list) or i >= len(smi_cells):
            continue
        for j, cell in enumerate(row):
            smi = smi_cells[i][j] if j < len(smi_cells[i]) else None
            if smi is None or i == j or cell == smi:
                continue
            a = smi_gpus[i] if i < len(smi_gpus) else f"GPU{i}"
            b = smi_gpus[j] if j < len(smi_gpus) else f"GPU{j}"
            notes.append(f"{a}-{b}: NVML {cell or 'N/A'}, nvidia-smi {smi}")
            row[j] = smi
    return out, notes


def sanitize_block(text: str | None) -> str | None:
    return None if text is None else sanitize_lines(text)


def parse_lines(lines: Sequence[str]) -> list[GpuEvent]:
    """Every well-formed event in `lines` (a recorded agent run), in order."""
    return [e for e in (parse_line(line) for line in lines) if e is not None]


# ------------------------------------------------------------------------------------------
# Streaming over a transport


class GpuCollector:
    """Async iterator of `GpuHeader` (first) then `GpuSample`s from a host's agent.

    Raises `GpuAgentError` when the agent reports a fatal error (one clear message, e.g. no
    NVIDIA driver) or exits without one. Warnings and garbage lines are counted, not raised;
    each warning also goes to `on_warning` (the console shows it in its event log).
    """

    def __init__(self, transport: Transport, options: AgentOptions | None = None,
                 on_warning: Callable[[str], None] | None = None) -> None:
        self.transport = transport
        self.options = options or AgentOptions()
        self.on_warning = on_warning
        self.header: GpuHeader | None = None
        self.last_sample: GpuSample | None = None
        self.warnings: list[str] = []
        self.garbage_lines = 0
        self._stream: LineStream | None = None

    async def __aenter__(self) -> GpuCollector:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        if self._stream is None:
            options = self.options
            if options.sim_state:  # a host path: `~` is the host's home
                sim_state = await self.transport.resolve_path(options.sim_state)
                options = dataclasses.replace(options, sim_state=sim_state)
            program = await self.transport.install_program("plateau-gpu-agent", agent_source())
            self._stream = await self.transport.stream_lines(agent_argv(options, program))

    async def close(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            await stream.close()

    def __aiter__(self) -> AsyncIterator[GpuHeader | GpuSample]:
        return self._events()

    async def _events(self) -> AsyncIterator[GpuHeader | GpuSample]:
        await self.start()
        assert self._stream is not None
        stream = self._stream
        async for line in stream:
            event = parse_line(line)
            if event is None:
                if line.strip():
                    self.garbage_lines += 1
                continue
            if isinstance(event, AgentError):
                raise GpuAgentError(f"{self.transport.host_name}: {event.message}", event.code)
            if isinstance(event, AgentWarning):
                self.warnings = [*self.warnings[-49:], event.message]
                if self.on_warning is not None:
                    self.on_warning(event.message)
                continue
            if isinstance(event, GpuHeader):
                self.header = event
            else:
                self.last_sample = event
            yield event
        status = stream.exit_status
        if self._stream is stream and status not in (0, None):
            raise GpuAgentError(
                f"{self.transport.host_name}: GPU agent exited with status {status}"
                + ("" if self.header else f" before its header (is {self.options.python} there?)")
            )


async def read_once(
    transport: Transport, options: AgentOptions | None = None
) -> tuple[GpuHeader, GpuSample]:
    """Header and one sample (for `plateau gpus --once` and `plateau snapshot`)."""
    o = options or AgentOptions()
    opts = AgentOptions(**{**o.__dict__, "count": 1})
    header: GpuHeader | None = None
    async with GpuCollector(transport, opts) as collector:
        async for event in collector:
            if isinstance(event, GpuHeader):
                header = event
            elif header is not None:
                return header, event
    raise GpuAgentError(f"{transport.host_name}: GPU agent produced no sample")
