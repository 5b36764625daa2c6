"""Parsing `nvidia-smi topo -m` and `topo -p2p X` text into matrices.

Format (verified on driver 580): tab-separated, the header row underlined with ANSI escapes
even when piped, cells padded with spaces (" X "), NIC rows/columns on hosts with NICs, and a
blank line before `Legend:`. Rows carry a stray empty cell before `GPU NUMA ID`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_DEVICE = re.compile(r"^(GPU|NIC)\d+$")


@dataclass(frozen=True)
class ParsedMatrix:
    gpus: list[str]
    cells: list[list[str | None]]
    cpu_affinity: list[str | None] = field(default_factory=list)
    numa_affinity: list[str | None] = field(default_factory=list)


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def parse_matrix(text: str) -> ParsedMatrix:
    """GPU-by-GPU cells of a `topo -m` or `topo -p2p` table (NIC rows/columns dropped)."""
    lines = strip_ansi(text).replace("\r", "").split("\n")
    header: list[str] | None = None
    rows: dict[str, list[str]] = {}
    order: list[str] = []
    for line in lines:
        if header is None:
            if "\t" in line and any(_DEVICE.match(c.strip()) for c in line.split("\t")):
                header = [c.strip() for c in line.split("\t")][1:]
            continue
        if not line.strip() or line.strip().startswith("Legend"):
            break
        fields = line.split("\t")
        label = fields[0].strip()
        if _DEVICE.match(label):
            rows[label] = [c.strip() for c in fields[1:]]
            order.append(label)
    if header is None:
        return ParsedMatrix(gpus=[], cells=[])
    devices = [h for h in header if _DEVICE.match(h)]
    gpu_cols = [i for i, h in enumerate(devices) if h.startswith("GPU")]
    gpus = [label for label in order if label.startswith("GPU")]
    has_affinity = "CPU Affinity" in header
    cells: list[list[str | None]] = []
    cpu: list[str | None] = []
    numa: list[str | None] = []
    for label in gpus:
        row = rows[label]
        cells.append([(row[i] or None) if i < len(row) else None for i in gpu_cols])
        if has_affinity:
            rest = row[len(devices):]
            cpu.append((rest[0] or None) if len(rest) > 0 else None)
            numa.append((rest[1] or None) if len(rest) > 1 else None)
    return ParsedMatrix(gpus=gpus, cells=cells, cpu_affinity=cpu, numa_affinity=numa)


LINK_MEANING: dict[str, str] = {
    "X": "self",
    "SYS": "PCIe + SMP interconnect between NUMA nodes (QPI/UPI)",
    "NODE": "PCIe + interconnect between host bridges in a NUMA node",
    "PHB": "PCIe + a host bridge (typically the CPU)",
    "PXB": "multiple PCIe bridges (no host bridge)",
    "PIX": "at most a single PCIe bridge",
    "NV#": "a bonded set of # NVLinks",
}

P2P_MEANING: dict[str, str] = {
    "X": "self",
    "OK": "status OK",
    "CNS": "chipset not supported",
    "GNS": "GPU not supported",
    "TNS": "topology not supported",
    "NS": "not supported",
    "DR": "disabled by regkey",
    "U": "unknown",
}
