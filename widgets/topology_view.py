"""GPU-to-GPU topology and P2P matrix (what `nvidia-smi topo -m` / `topo -p2p r` say),
with CPU/NUMA affinity and NVLink state. Renders typed data only: `update_topology(header)`."""

from __future__ import annotations

from textual.containers import VerticalScroll
from textual.content import Content
from textual.widgets import Static

from console.gpu.format import nvlink_generation
from console.gpu.models import GpuHeader, NvLinkGpu, Topology
from console.gpu.topology import LINK_MEANING, P2P_MEANING

_SHORT = {"NODE": "NOD"}


def link_style(cell: str | None, variables: dict[str, str]) -> str:
    def var(name: str, fallback: str) -> str:
        return f"${name}" if name in variables else fallback

    if cell is None:
        return "$text-muted"
    if cell == "X":
        return "$text-muted"
    if cell.startswith("NV"):
        return "bold " + var("gpu-load-low", "$success")
    if cell in ("PIX", "PXB", "OK"):
        return var("gpu-load-low", "$success")
    if cell in ("PHB", "NODE"):
        return var("gpu-load-mid", "$warning")
    return var("gpu-load-high", "$error")  # SYS, CNS, GNS, TNS, NS, DR, U


def _cell_text(cell: str | None, width: int) -> str:
    text = "N/A" if cell is None else cell
    if len(text) >= width:
        text = _SHORT.get(text, text)
        if text.startswith("NV") and len(text) >= width:
            text = "N" + text[2:]
    return text[: width - 1].center(width - 1) + " "


def matrix_lines(
    title: str,
    gpus: list[str],
    cells: list[list[str | None]],
    width: int,
    variables: dict[str, str],
    extra_cols: list[tuple[str, list[str | None]]] | None = None,
) -> list[Content]:
    n = len(gpus)
    labels = [g.replace("GPU", "") for g in gpus]
    label_w = max(4, *(len(lbl) + 4 for lbl in labels)) if labels else 4
    natural = max(5, *(len(c or "N/A") + 2 for row in cells for c in row)) if cells else 5
    cell_w = natural
    # Shrink cells (abbreviating) before asking for horizontal scroll.
    while cell_w > 4 and label_w + n * cell_w > width:
        cell_w -= 1
    lines = [Content.styled(title, "bold")]
    head = "".ljust(label_w) + "".join(("G" + lbl)[: cell_w - 1].center(cell_w - 1) + " "
                                       for lbl in labels)
    for name, _ in extra_cols or []:
        head += f" {name}"
    lines.append(Content.styled(head, "underline"))
    for i, row in enumerate(cells):
        parts: list[str | tuple[str, str]] = [f"GPU{labels[i]}".ljust(label_w)]
        for j in range(n):
            cell = row[j] if j < len(row) else None
            parts.append((_cell_text(cell, cell_w), link_style(cell, variables)))
        for name, values in extra_cols or []:
            value = values[i] if i < len(values) else None
            parts.append(" " + (value or "N/A").ljust(len(name)))
        lines.append(Content.assemble(*parts))
    return lines


def nvlink_line(gpu: NvLinkGpu) -> str:
    """"GPU0: 18/18 links up · NVLink 4 · all to NVSwitch"."""
    active = [link for link in gpu.links if link.active]
    parts = [f"GPU{gpu.index}: {len(active)}/{len(gpu.links)} links up"]
    codes = sorted({link.version for link in active if link.version is not None})
    if codes:
        parts.append(", ".join(nvlink_generation(c) for c in codes))
    switch = sum(1 for link in active if link.remote_type == "switch")
    if switch:
        parts.append("all to NVSwitch" if switch == len(active) else f"{switch} to NVSwitch")
    return " · ".join(parts)


class TopologyView(VerticalScroll):
    """Link matrix, P2P read/write matrices, affinity, NVLink, and a legend."""

    DEFAULT_CSS = """
    TopologyView { height: 1fr; width: 1fr; overflow-x: auto; }
    TopologyView > Static { width: auto; min-width: 100%; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.header: GpuHeader | None = None
        self._body = Static("No topology yet (it arrives with the agent's header).",
                            markup=False)

    def compose(self):  # type: ignore[no-untyped-def]
        yield self._body

    def update_topology(self, header: GpuHeader) -> None:
        self.header = header
        self._render_body()

    def on_resize(self) -> None:
        if self.header is not None:
            self._render_body()

    def _render_body(self) -> None:
        if self.header is None or not self.is_mounted:
            return
        self._body.update(self.build(self.header, self.size.width or 80))

    def build(self, header: GpuHeader, width: int) -> Content:
        variables = getattr(self.app, "theme_variables", {}) or {}
        topo: Topology = header.topology
        out: list[Content] = []
        if not topo.gpus:
            out.append(Content(f"Topology: not available ({topo.source})."))
            if topo.topo_m_text:
                out.append(Content(topo.topo_m_text))
            return Content("\n").join(out)
        extra: list[tuple[str, list[str | None]]] = []
        if topo.cpu_affinity:
            extra.append(("CPU", topo.cpu_affinity))
        if topo.numa_affinity:
            extra.append(("NUMA", topo.numa_affinity))
        title = f"Links ({topo.source}"
        if topo.smi_checked and topo.source != "smi":
            title += ", checked with nvidia-smi topo -m"
        out += matrix_lines(title + ")", topo.gpus, topo.links, width, variables, extra)
        for note in topo.disagreements:
            out.append(Content.styled(f"  nvidia-smi differs, shown: {note}", "$warning"))
        for kind in ("read", "write"):
            cells = topo.p2p.get(kind)
            if cells:
                out.append(Content(""))
                out += matrix_lines(f"P2P {kind}", topo.gpus, cells, width, variables)
        out.append(Content(""))
        out.append(Content.styled("NVLink", "bold"))
        if header.nvlink is None:
            out.append(Content("  none (not supported on these GPUs: peers talk over PCIe)"))
        else:
            for gpu in header.nvlink:
                out.append(Content("  " + nvlink_line(gpu)))
        used = {c for row in topo.links for c in row if c} | {
            c for m in topo.p2p.values() for row in m for c in row if c
        }
        legend = [f"{k} = {v}" for k, v in LINK_MEANING.items()
                  if k in used or (k == "NV#" and any(c.startswith("NV") for c in used))]
        legend += [f"{k} = {v}" for k, v in P2P_MEANING.items() if k in used and k != "X"]
        if legend:
            out.append(Content(""))
            out.append(Content.styled("Legend", "bold"))
            out += [Content.styled("  " + line, "$text-muted") for line in legend]
        return Content("\n").join(out)
