"""Text formatting of GPU readings, shared by `plateau gpus` and the widgets. None -> "N/A"."""

from __future__ import annotations

from console.gpu.models import NA, GpuHeader, GpuReading, GpuSample

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
    return " · ".join(parts)


TABLE_COLUMNS = (
    ("GPU", 3), ("NAME", 18), ("UTIL", 5), ("MEM", 13), ("POWER", 10), ("TEMP", 5),
    ("SM CLOCK", 12), ("PCIE", 10), ("PCIE RX/TX", 14), ("THROTTLE", 10),
)


def table(sample: GpuSample) -> str:
    """Plain-text table of one sample (for `plateau gpus`)."""
    rows = [[name for name, _ in TABLE_COLUMNS]]
    for g in sample.gpus:
        rows.append([
            str(g.index), short_name(g.name)[:18], pct(g.util_gpu), mem(g), watts(g), temp(g),
            clocks(g), pcie_link(g), pcie_rates(g), throttle_badge(g) or "-",
        ])
    widths = [
        max(w, *(len(r[i]) for r in rows)) for i, (_, w) in enumerate(TABLE_COLUMNS)
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
