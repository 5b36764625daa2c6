"""Text formatting of GPU readings, shared by `plateau gpus` and the widgets. None -> "N/A"."""

from __future__ import annotations

from typing import TYPE_CHECKING

from console.gpu.na import NA

if TYPE_CHECKING:  # the models come with the first sample (console/gpu/na.py)
    from console.gpu.models import GpuHeader, GpuReading, GpuSample

_NAME_TRIM = (
    ("NVIDIA ", ""),
    ("GeForce ", ""),
    (" Blackwell Server Edition", " BW SE"),
    (" Blackwell Workstation Edition", " BW WS"),
    (" Blackwell Max-Q Workstation Edition", " BW MQ"),
    (" Blackwell", " BW"),
)


def short_name(name: str | None) -> str:
    if not name:
        return NA
    for old, new in _NAME_TRIM:
        name = name.replace(old, new)
    return name


def pct(value: float | None) -> str:
    return NA if value is None else f"{value:.0f}%"


def gib(mib: float | None) -> str:
    return NA if mib is None else f"{mib / 1024:.1f}"


def mem(reading: GpuReading) -> str:
    if reading.mem_used_mib is None and reading.mem_total_mib is None:
        return NA
    return f"{gib(reading.mem_used_mib)}/{gib(reading.mem_total_mib)}G"


def watts(reading: GpuReading) -> str:
    draw = NA if reading.power_w is None else f"{reading.power_w:.0f}"
    limit = NA if reading.power_limit_w is None else f"{reading.power_limit_w:.0f}"
    return f"{draw}/{limit}W"


def temp(reading: GpuReading, *, ascii_only: bool = False) -> str:
    return NA if reading.temp_c is None else f"{reading.temp_c:.0f}{'C' if ascii_only else '°C'}"


def mhz(value: float | None) -> str:
    return NA if value is None else f"{value:.0f}"


def clocks(reading: GpuReading) -> str:
    return f"{mhz(reading.sm_clock_mhz)}/{mhz(reading.sm_clock_max_mhz)}MHz"


def rate(bytes_per_s: float | None) -> str:
    """Bytes/s, human: 812K, 3.4M, 12.1G (per second)."""
    if bytes_per_s is None:
        return NA
    value = float(bytes_per_s)
    for unit in ("B", "K", "M", "G", "T"):
        if abs(value) < 1000 or unit == "T":
            if unit == "B":
                return f"{value:.0f}B"
            return f"{value:.1f}{unit}" if value < 100 else f"{value:.0f}{unit}"
        value /= 1000.0
    return NA


def pcie_link(reading: GpuReading) -> str:
    def part(cur: int | None, top: int | None, prefix: str) -> str:
        c = "?" if cur is None else str(cur)
        if top is None or cur == top:
            return f"{prefix}{c}"
        return f"{prefix}{c}/{top}"

    if reading.pcie_gen is None and reading.pcie_width is None:
        return NA
    return (
        f"{part(reading.pcie_gen, reading.pcie_gen_max, 'Gen')} "
        f"{part(reading.pcie_width, reading.pcie_width_max, 'x')}"
    )


def pcie_rates(reading: GpuReading, *, ascii_only: bool = False) -> str:
    if reading.pcie_rx_bytes_s is None and reading.pcie_tx_bytes_s is None:
        return NA
    down, up = ("r", "t") if ascii_only else ("↓", "↑")
    return f"{down}{rate(reading.pcie_rx_bytes_s)} {up}{rate(reading.pcie_tx_bytes_s)}"


def nvlink_rates(reading: GpuReading, *, ascii_only: bool = False) -> str:
    if reading.nvlink_rx_bytes_s is None and reading.nvlink_tx_bytes_s is None:
        return NA
    down, up = ("r", "t") if ascii_only else ("↓", "↑")
    return f"{down}{rate(reading.nvlink_rx_bytes_s)} {up}{rate(reading.nvlink_tx_bytes_s)}"


# nvmlDeviceGetNvLinkVersion's codes (nvml.h nvmlNvlinkVersion_t) -> the NVLink version they
# name: code 6 is NVLINK_VERSION_4_0, i.e. NVLink 4 (Hopper: H100/H200).
NVLINK_VERSIONS = {1: "1.0", 2: "2.0", 3: "2.2", 4: "3.0", 5: "3.1", 6: "4.0", 7: "5.0", 8: "6.0"}


def nvlink_generation(code: int | None) -> str:
    """"NVLink 4" for code 6 (a point release keeps its minor: "NVLink 2.2"); an unknown code
    says so rather than guessing."""
    if code is None:
        return NA
    version = NVLINK_VERSIONS.get(code)
    if version is None:
        return f"NVLink (version code {code})"
    return "NVLink " + (version[:-2] if version.endswith(".0") else version)


def throttle_words(reading: GpuReading) -> str:
    """Reasons the clocks are held down, in words ("idle", "none", N/A when unknown)."""
    if reading.throttled:
        return ", ".join(reading.throttled)
    if reading.clock_reasons is None:
        return NA
    return "idle" if "idle" in reading.clock_reasons else "none"


THROTTLE_SHORT = {
    "sw power cap": "PWR",
    "hw slowdown": "HW",
    "hw thermal": "HOT",
    "sw thermal": "THRM",
    "hw power brake": "BRAKE",
    "sync boost": "SYNC",
}


def throttle_badge(reading: GpuReading) -> str:
    """Short badge for the reasons that cost throughput; "" when none, N/A when unknown."""
    if reading.clock_reasons is None:
        return NA
    return " ".join(THROTTLE_SHORT.get(r, r.upper()) for r in reading.throttled)


def header_line(host: str, header: GpuHeader) -> str:
    parts = [f"host {host}", f"backend {header.backend}"]
    if header.driver_version:
        parts.append(f"driver {header.driver_version}")
    if header.cuda_version:
        parts.append(f"CUDA {header.cuda_version}")
    parts.append(f"{len(header.gpus)} GPU{'s' if len(header.gpus) != 1 else ''}")
    if header.pcie_mode:
        parts.append(f"PCIe rate: {header.pcie_mode}")
    if header.nvlink:
        parts.append(nvlink_summary(header))
    return " · ".join(parts)


TABLE_COLUMNS = (
    ("GPU", 3), ("NAME", 18), ("UTIL", 5), ("MEM", 13), ("POWER", 10), ("TEMP", 5),
    ("SM CLOCK", 12), ("PCIE", 10), ("PCIE RX/TX", 14), ("THROTTLE", 10),
)


NVLINK_COLUMN = ("NVLINK RX/TX", 14)


def has_nvlink_rates(sample: GpuSample) -> bool:
    return any(
        g.nvlink_rx_bytes_s is not None or g.nvlink_tx_bytes_s is not None for g in sample.gpus
    )


def table(sample: GpuSample, *, nvlink: bool | None = None) -> str:
    """Plain-text table of one sample (for `plateau gpus`). The NVLink column is there when
    the host has NVLink (`nvlink`, from the header) or the sample carries NVLink rates."""
    show_nvlink = has_nvlink_rates(sample) if nvlink is None else nvlink
    columns = list(TABLE_COLUMNS)
    if show_nvlink:
        columns.insert(len(columns) - 1, NVLINK_COLUMN)
    rows = [[name for name, _ in columns]]
    for g in sample.gpus:
        cells = [
            str(g.index), short_name(g.name)[:18], pct(g.util_gpu), mem(g), watts(g), temp(g),
            clocks(g), pcie_link(g), pcie_rates(g), throttle_badge(g) or "-",
        ]
        if show_nvlink:
            cells.insert(len(cells) - 1, nvlink_rates(g))
        rows.append(cells)
    widths = [
        max(w, *(len(r[i]) for r in rows)) for i, (_, w) in enumerate(columns)
    ]
    lines = []
    for r in rows:
        cells = [
            cell.rjust(widths[i]) if i in (0, 2) else cell.ljust(widths[i])
            for i, cell in enumerate(r)
        ]
        lines.append("  ".join(cells).rstrip())
    if sample.cost_ms is not None:
        lines.append(f"(sample #{sample.seq} cost {sample.cost_ms:.2f} ms on the host)")
    return "\n".join(lines)


def nvlink_summary(header: GpuHeader) -> str:
    """"NVLink 4 · 18 links/GPU" (N/A parts when unknown); "" without NVLink."""
    if not header.nvlink:
        return ""
    codes = sorted({link.version for g in header.nvlink for link in g.links
                    if link.active and link.version is not None})
    gen = ", ".join(nvlink_generation(c) for c in codes) if codes else "NVLink"
    active = sorted({sum(1 for link in g.links if link.active) for g in header.nvlink})
    per_gpu = "/".join(str(n) for n in active)
    return f"{gen} · {per_gpu} links/GPU"
