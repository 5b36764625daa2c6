"""Typed GPU telemetry: what the agent's JSON lines become. `None` means N/A (unsupported,
not reported, or garbled); it is a value, never an exception."""

# No `from __future__ import annotations` here: pydantic evaluates every field's annotation
# when the class is made, and a string one is compiled first (typing.ForwardRef) — a few ms
# of the console's start-up for these classes.

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from console.gpu.na import NA  # noqa: F401  (re-exported: where readings are made)
from console.text import sanitize


def _num(value: Any) -> float | None:
    """Anything number-like -> finite float; N/A spellings, junk, NaN -> None."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.strip()
        if not text or text.startswith("[") or text.upper() in ("N/A", "NA", "-"):
            return None
        value = text
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int of 400 digits
        return None
    return number if math.isfinite(number) else None


def _int(value: Any) -> int | None:
    number = _num(value)
    return int(number) if number is not None else None


def _str(value: Any) -> str | None:
    if value is None:
        return None
    text = sanitize(str(value).strip())  # written by the host: never raw on a terminal
    if not text or text.upper() in ("N/A", "[N/A]", "[NOT SUPPORTED]"):
        return None
    return text


Num = Annotated[float | None, BeforeValidator(_num)]
Int = Annotated[int | None, BeforeValidator(_int)]
Str = Annotated[str | None, BeforeValidator(_str)]


def _list_or_none(value: Any) -> list[Any] | None:
    return value if isinstance(value, list) else None


def _dict_or_none(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


class _Model(BaseModel):
    # Validators are built on first use (the first sample), not at import: the console's
    # first frame shows no GPU data yet and need not pay for them.
    model_config = ConfigDict(frozen=True, extra="ignore", defer_build=True)


class GpuProcess(_Model):
    pid: int
    used_mib: Num = None
    name: Str = None
    user: Str = None
    uid: Int = None
    cmd: Str = None


class GpmMetrics(_Model):
    """GPM (Hopper and newer): the signals util% hides. Percentages 0-100."""

    sm_util: Num = None
    sm_occupancy: Num = None
    tensor_util: Num = None
    dram_bw_util: Num = None


def _procs(value: Any) -> list[GpuProcess] | None:
    if not isinstance(value, list):
        return None
    out = []
    for item in value:
        if isinstance(item, dict) and _int(item.get("pid")) is not None:
            out.append(GpuProcess.model_validate(item))
    return out


def _gpm(value: Any) -> GpmMetrics | None:
    return GpmMetrics.model_validate(value) if isinstance(value, dict) else None


def _words(value: Any) -> list[str] | None:
    if not isinstance(value, list):
        return None
    return [str(v) for v in value if isinstance(v, str)]


class GpuReading(_Model):
    """One GPU at one instant."""

    index: int
    name: Str = None
    uuid: Str = None
    pci_bus_id: Str = None
    util_gpu: Num = None
    util_mem: Num = None
    mem_used_mib: Num = None
    mem_total_mib: Num = None
    power_w: Num = None
    power_limit_w: Num = None
    temp_c: Num = None
    mem_temp_c: Num = None
    sm_clock_mhz: Num = None
    sm_clock_max_mhz: Num = None
    mem_clock_mhz: Num = None
    mem_clock_max_mhz: Num = None
    clock_reasons_mask: Int = None
    clock_reasons: Annotated[list[str] | None, BeforeValidator(_words)] = None
    pcie_gen: Int = None
    pcie_gen_max: Int = None
    pcie_width: Int = None
    pcie_width_max: Int = None
    pcie_tx_bytes_s: Num = None
    pcie_rx_bytes_s: Num = None
    nvlink_tx_bytes_s: Num = None
    nvlink_rx_bytes_s: Num = None
    ecc_uncorrected: Int = None
    ecc_corrected: Int = None
    xid_count: Int = None
    xid_new: Annotated[list[int], BeforeValidator(lambda v: _ints(v))] = Field(
        default_factory=list
    )
    fan_pct: Num = None
    pstate: Str = None
    processes: Annotated[list[GpuProcess] | None, BeforeValidator(_procs)] = None
    gpm: Annotated[GpmMetrics | None, BeforeValidator(_gpm)] = None

    @property
    def mem_pct(self) -> float | None:
        return _pct(self.mem_used_mib, self.mem_total_mib)

    @property
    def power_pct(self) -> float | None:
        return _pct(self.power_w, self.power_limit_w)

    @property
    def pcie_bytes_s(self) -> float | None:
        """TX + RX (None when neither is known)."""
        if self.pcie_tx_bytes_s is None and self.pcie_rx_bytes_s is None:
            return None
        return (self.pcie_tx_bytes_s or 0.0) + (self.pcie_rx_bytes_s or 0.0)

    @property
    def throttled(self) -> list[str]:
        """Clock-event reasons that cost throughput (idle and app-clock settings don't)."""
        if not self.clock_reasons:
            return []
        return [r for r in self.clock_reasons if r not in _HARMLESS_CLOCK_REASONS]

    @property
    def pcie_downtrained(self) -> bool:
        """Link below its maximum while the GPU is busy (idle links downclock on purpose)."""
        busy = (self.util_gpu or 0) > 5
        gen_low = self.pcie_gen is not None and self.pcie_gen_max is not None and (
            self.pcie_gen < self.pcie_gen_max
        )
        width_low = self.pcie_width is not None and self.pcie_width_max is not None and (
            self.pcie_width < self.pcie_width_max
        )
        return width_low or (busy and gen_low)


_HARMLESS_CLOCK_REASONS = frozenset({"idle", "app clocks", "display clocks"})


def _ints(value: Any) -> list[int]:
    if not isinstance(value, list):
        return []
    return [i for i in (_int(v) for v in value) if i is not None]


def _pct(part: float | None, whole: float | None) -> float | None:
    if part is None or not whole:
        return None
    return max(0.0, min(100.0, 100.0 * part / whole))


class SimInfo(_Model):
    phase: Str = None
    tokens_per_s: Num = None
    running: Int = None
    queued: Int = None


class GpuSample(_Model):
    """One tick of the agent: every GPU, plus what sampling cost on the host."""

    seq: Int = None
    t: Num = None
    cost_ms: Num = None
    agent_cpu_ms: Num = None  # the agent's CPU (all threads) since its previous sample
    pcie_sweep_ms: Num = None
    gpus: list[GpuReading] = Field(default_factory=list)
    sim: Annotated[SimInfo | None, BeforeValidator(lambda v: _dict_or_none(v))] = None
    sim_state: Str = None

    @model_validator(mode="before")
    @classmethod
    def _drop_bad_gpus(cls, data: Any) -> Any:
        # One garbled GPU entry must not lose the others.
        if isinstance(data, dict) and isinstance(data.get("gpus"), list):
            data = dict(data)
            data["gpus"] = [
                g
                for g in data["gpus"]
                if isinstance(g, GpuReading)
                or (isinstance(g, dict) and _int(g.get("index")) is not None)
            ]
        return data


class GpuIdentity(_Model):
    index: int
    name: Str = None
    uuid: Str = None
    pci_bus_id: Str = None
    compute_cap: Str = None
    memory_total_mib: Num = None
    power_limit_w: Num = None
    sm_clock_max_mhz: Num = None
    mem_clock_max_mhz: Num = None
    pcie_gen_max: Int = None
    pcie_width_max: Int = None
    gpm_supported: bool = False


def _matrix(value: Any) -> list[list[str | None]]:
    if not isinstance(value, list):
        return []
    return [
        [_str(cell) for cell in row] if isinstance(row, list) else [] for row in value
    ]


Matrix = Annotated[list[list[str | None]], BeforeValidator(_matrix)]


class Topology(_Model):
    """The GPU-to-GPU matrix (`nvidia-smi topo -m` words: X, NV#, PIX, PXB, PHB, NODE, SYS)
    and P2P capability per kind (read, write, nvlink, atomics, prop: OK, CNS, GNS, TNS, NS,
    DR, U). Cells are None where unknown."""

    source: Literal["nvml", "smi", "sim", "none"] = "none"
    gpus: list[str] = Field(default_factory=list)
    links: Matrix = Field(default_factory=list)
    p2p: dict[str, Matrix] = Field(default_factory=dict)
    cpu_affinity: list[str | None] = Field(default_factory=list)
    numa_affinity: list[str | None] = Field(default_factory=list)
    topo_m_text: str | None = None
    p2p_read_text: str | None = None
    smi_checked: bool = False  # the matrix was compared with `nvidia-smi topo -m`
    disagreements: list[str] = Field(default_factory=list)  # cells where nvidia-smi won


class NvLinkLink(_Model):
    link: int
    active: bool = False
    version: Int = None  # nvmlNvlinkVersion_t code (6 = NVLink 4): format.nvlink_generation
    remote_bus_id: Str = None
    remote_type: Str = None  # gpu, switch, ibmnpu, unknown (None: the driver did not say)


class NvLinkGpu(_Model):
    index: int
    link_count: Int = None
    links: list[NvLinkLink] = Field(default_factory=list)


class HostInfo(_Model):
    hostname: Str = None
    kernel: Str = None
    python: Str = None
    cpus: Int = None
    pid: Int = None
    uid: Int = None  # who the agent runs as on the host: the operator's own processes
    user: Str = None
    agent_version: Int = None


class GpuHeader(_Model):
    """Sent once per connection, before the first sample."""

    backend: Literal["nvml", "smi", "sim"] | str = "unknown"
    interval: Num = None
    driver_version: Str = None
    nvml_version: Str = None
    cuda_version: Str = None
    pcie_mode: Str = None
    nvlink_mode: Str = None  # where NVLink rates come from: gpm, all-links, per-link, off
    host: HostInfo = Field(default_factory=HostInfo)
    gpus: list[GpuIdentity] = Field(default_factory=list)
    topology: Topology = Field(default_factory=Topology)
    nvlink: list[NvLinkGpu] | None = None
    sim_state_path: Str = None


class AgentError(_Model):
    """The agent's fatal message (e.g. no NVIDIA driver); it exits non-zero after it."""

    code: str = "error"
    message: str = ""


class AgentWarning(_Model):
    message: str = ""


GpuEvent = GpuHeader | GpuSample | AgentError | AgentWarning
