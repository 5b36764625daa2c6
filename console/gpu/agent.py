# ruff: noqa: UP031, B905
# (percent formatting reads fine; zip(strict=) does not exist on the host's Python 3.8)
"""Plateau GPU telemetry agent: one stdlib-only file run on the host as `python3 PATH ARGS`
(PATH: the transport's verified copy `<run_dir>/bin/plateau-gpu-agent-<hash>.py`).

Prints one JSON object per line on stdout:
  {"type": "header", ...}   once: host, driver, backend, GPU identities, topology, NVLink
  {"type": "sample", ...}   every --interval seconds: per-GPU readings, cost_ms
  {"type": "warn", ...}     something optional failed (the stream goes on)
  {"type": "error", ...}    fatal (e.g. no NVIDIA driver); the agent then exits non-zero

Unsupported values are null, never an exception. Keep this file Python 3.8 compatible (it runs
on the host's own python3) and small (it is copied to the host on the first use per
connection).
"""

import argparse
import json
import math
import os
import platform
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

AGENT_VERSION = 1
EXIT_NO_DRIVER = 3
EXIT_BAD_ARGS = 2
MIN_INTERVAL = 0.25
ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

# nvmlClocksEventReason* bits -> words shown to the operator.
CLOCK_REASONS = (
    (0x1, "idle"),
    (0x2, "app clocks"),
    (0x4, "sw power cap"),
    (0x8, "hw slowdown"),
    (0x10, "sync boost"),
    (0x20, "sw thermal"),
    (0x40, "hw thermal"),
    (0x80, "hw power brake"),
    (0x100, "display clocks"),
)
# nvmlDeviceGetTopologyCommonAncestor levels -> nvidia-smi topo -m words.
TOPO_LEVELS = {0: "PIX", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
# nvmlDeviceGetP2PStatus results -> nvidia-smi topo -p2p words.
P2P_CODES = {0: "OK", 1: "CNS", 2: "GNS", 3: "TNS", 4: "DR", 5: "NS", 6: "U"}
# P2P capability indices. READ is the literal 0: nvidia-ml-py 13.615.71 defines
# NVML_P2P_CAPS_INDEX_READ as the tuple (0,) (trailing comma), which ctypes rejects.
P2P_INDICES = (("read", 0), ("write", 1), ("nvlink", 2), ("atomics", 3), ("prop", 4))
# nvmlDeviceGetNvLinkRemoteDeviceType -> words (nvml.h nvmlIntNvLinkDeviceType_t).
NVLINK_REMOTE_TYPES = {0: "gpu", 1: "ibmnpu", 2: "switch", 0xFF: "unknown"}
# What NVML reports as the remote PCI bus id of a link that ends on an NVSwitch (seen on
# 2 x H200, driver 580): a placeholder, not a device.
SWITCH_BUS_ID = "FFFFFFFF:FF:FF.0"
# NVML field ids (nvml.h): NVLink link count, memory temperature, NVLink data throughput.
FI_NVLINK_LINK_COUNT = 91
FI_MEMORY_TEMP = 82
FI_NVLINK_TX, FI_NVLINK_RX = 138, 139  # KiB; scopeId = link, or UINT_MAX for all links
ALL_LINKS = 0xFFFFFFFF

SMI_FIELDS = [
    "index", "name", "uuid", "pci.bus_id", "utilization.gpu", "utilization.memory",
    "memory.used", "memory.total", "power.draw", "power.limit", "temperature.gpu",
    "temperature.memory", "clocks.sm", "clocks.max.sm", "clocks.mem", "clocks.max.mem",
    "clocks_event_reasons.active", "pcie.link.gen.gpucurrent", "pcie.link.gen.max",
    "pcie.link.width.current", "pcie.link.width.max", "ecc.errors.uncorrected.volatile.total",
    "ecc.errors.corrected.volatile.total", "fan.speed", "pstate", "driver_version",
]
# Older drivers (< R535) reject the newer names with exit code 2: same positions, old names.
SMI_FIELDS_OLD = [
    {"clocks_event_reasons.active": "clocks_throttle_reasons.active",
     "pcie.link.gen.gpucurrent": "pcie.link.gen.current"}.get(f, f)
    for f in SMI_FIELDS
]


def now_ms(t0):
    return round((time.perf_counter() - t0) * 1000.0, 3)


def scrub(obj):
    """NaN/inf -> None, recursively (JSON has no NaN)."""
    if isinstance(obj, float):
        return obj if not (math.isnan(obj) or math.isinf(obj)) else None
    if isinstance(obj, dict):
        return dict((k, scrub(v)) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return [scrub(v) for v in obj]
    return obj


def emit(obj):
    try:
        try:
            text = json.dumps(obj, separators=(",", ":"), allow_nan=False)
        except ValueError:
            text = json.dumps(scrub(obj), separators=(",", ":"), allow_nan=False, default=str)
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        # The console went away: leave quietly (the transport also kills our group).
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        finally:
            os._exit(0)


def warn(message):
    emit({"type": "warn", "message": message})


def fatal(code, message, exit_code):
    emit({"type": "error", "code": code, "message": message})
    sys.exit(exit_code)


def clean_num(value):
    """A finite float or None."""
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    if math.isnan(f) or math.isinf(f):
        return None
    return f


def as_str(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return None if value is None else str(value)


def decode_reasons(mask):
    if mask is None:
        return None
    return [word for bit, word in CLOCK_REASONS if mask & bit]


def host_info(backend):
    return {
        "hostname": socket.gethostname(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "pid": os.getpid(),
        "uid": os.getuid(),
        "user": user_name(os.getuid()),
        "agent_version": AGENT_VERSION,
        "backend": backend,
    }


def run_cmd(argv, timeout=10.0):
    """(exit code, stdout text) or (None, error text); never raises."""
    try:
        proc = subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return None, str(exc)
    out = proc.stdout.decode("utf-8", "replace")
    if proc.returncode != 0:
        out = out + proc.stderr.decode("utf-8", "replace")
    return proc.returncode, out


def smi_topology_text():
    """`nvidia-smi topo -m` and `topo -p2p r` with ANSI escapes stripped (or None)."""
    if not shutil.which("nvidia-smi"):
        return None
    result = {}
    for key, argv in (("topo_m", ["nvidia-smi", "topo", "-m"]),
                      ("p2p_read", ["nvidia-smi", "topo", "-p2p", "r"])):
        code, out = run_cmd(argv)
        result[key] = ANSI_RE.sub("", out) if code == 0 else None
    return result


# --------------------------------------------------------------------------------------------
# PCIe throughput: nvmlDeviceGetPcieThroughput blocks ~20 ms per call, so a background thread
# sweeps all GPUs and the sampling loop only reads the latest values.


class PcieSampler:
    def __init__(self, read_fn, count, period):
        self.read_fn = read_fn  # (gpu_index) -> (tx_bytes_per_s, rx_bytes_per_s)
        self.count = count
        self.period = period
        self.values = [(None, None)] * count
        self.sweep_ms = None
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread = None

    def sweep(self):
        t0 = time.perf_counter()
        values = []
        for i in range(self.count):
            try:
                values.append(self.read_fn(i))
            except Exception:
                values.append((None, None))
        with self.lock:
            self.values = values
            self.sweep_ms = now_ms(t0)

    def start(self):
        def loop():
            while not self.stop.is_set():
                started = time.monotonic()
                self.sweep()
                self.stop.wait(max(0.05, self.period - (time.monotonic() - started)))

        self.thread = threading.Thread(target=loop, name="pcie", daemon=True)
        self.thread.start()

    def latest(self, i):
        with self.lock:
            return self.values[i] if i < len(self.values) else (None, None)


# GPM metric ids (nvml.h nvmlGpmMetricId_t). PCIe and NVLink are MiB/s; NVLink "read" is RX.
GPM_METRICS = (("sm_util", 2), ("sm_occupancy", 3), ("tensor_util", 5), ("dram_bw_util", 10),
               ("pcie_tx_mib_s", 20), ("pcie_rx_mib_s", 21))
GPM_NVLINK = (("nvlink_rx_mib_s", 60), ("nvlink_tx_mib_s", 61))


def mib(value):
    return value * 1048576.0 if value is not None else None


# --------------------------------------------------------------------------------------------
# NVLink topology: which GPU pairs talk over NVLink, and over how many links.


def group_links(i, remotes, by_bus):
    """GPU i's active links -> {"gpus": {peer index: direct links}, "switch": links that end
    on an NVSwitch}. `remotes` is {link: (remote bus id, remote type word or None)}.

    Behind NVSwitch (every HGX board) each link's remote is the switch, not a GPU: NVML says
    so with the remote device type, and older drivers without that call give the switch's
    placeholder bus id."""
    peers = {}
    switch = 0
    for bus, kind in remotes.values():
        bus = (bus or "").upper()
        j = by_bus.get(bus)
        if kind == "switch" or (kind in (None, "unknown") and j is None and bus == SWITCH_BUS_ID):
            switch += 1
        elif j is not None and j != i:
            peers[j] = peers.get(j, 0) + 1
    return {"gpus": peers, "switch": switch}


def matrix_cell(matrix, i, j):
    try:
        return matrix[i][j]
    except (IndexError, KeyError, TypeError):
        return None


def nvlink_pairs(groups, p2p_nvlink):
    """{(i, j): links} for every GPU pair joined by NVLink, in `nvidia-smi topo -m`'s terms:
    direct links count per pair; two GPUs on the same NVSwitch fabric are joined by the
    fewer of their switch links (NV18 for two H200s of an HGX board), when NVML's P2P NVLink
    status between them is OK (or unreadable): a GPU whose switch links are up but whose
    fabric is not (no fabric manager) is not NVLink-reachable."""
    pairs = {}
    for i, g in groups.items():
        for j, count in g["gpus"].items():
            pairs[(i, j)] = count
    for i, gi in groups.items():
        for j, gj in groups.items():
            if i == j or not gi["switch"] or not gj["switch"]:
                continue
            status = matrix_cell(p2p_nvlink, i, j)
            if status in ("OK", None):
                pairs[(i, j)] = pairs.get((i, j), 0) + min(gi["switch"], gj["switch"])
    return pairs


# --------------------------------------------------------------------------------------------
# NVML backend


class NvmlBackend:
    name = "nvml"

    def __init__(self, nvml, args):
        self.nv = nvml
        self.args = args
        self.handles = []
        self.static = []
        self.gpm_prev = {}
        self.gpm_ok = {}
        self.nvlink_active = {}
        self.nvlink_prev = {}
        self.nvlink_remote = {}  # gpu index -> {link: (remote bus id, remote type)}
        self.nvlink_src = {}  # gpu -> "gpm" | "all-links" | "per-link" (absent: none)
        self.gpm_bufs = {}
        self.unsupported = set()
        self.proc_cache = {}  # pid -> (name, user, uid, cmd): /proc read once per process
        self.xid_lock = threading.Lock()
        self.xid_events = {}
        self.xid_count = {}
        self.pcie = None
        self.pcie_mode = "off"
        self.tick = 0
        self.mem_v2 = True

    def call(self, fn, *a):
        """fn(*a), or None when unsupported / not found / any NVML error."""
        try:
            return fn(*a)
        except Exception:
            return None

    def sticky(self, i, fn, *a):
        """Like call(), for a per-sample reading: once the GPU says NotSupported (a fan on a
        passively cooled board), it is not asked again (the error path costs ~0.15 ms)."""
        key = (i, fn.__name__)
        if key in self.unsupported:
            return None
        try:
            return fn(*a)
        except Exception as exc:
            if "NotSupported" in type(exc).__name__:
                self.unsupported.add(key)
            return None

    def open(self):
        nv = self.nv
        nv.nvmlInit()
        count = nv.nvmlDeviceGetCount()
        self.handles = [nv.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        for i, h in enumerate(self.handles):
            self.static.append(self.identity(i, h))
            gpm = None if self.args.no_gpm else self.call(nv.nvmlGpmQueryDeviceSupport, h)
            self.gpm_ok[i] = bool(gpm is not None and getattr(gpm, "isSupportedDevice", 0))
        self.setup_pcie()
        if not self.args.no_xid:
            self.start_xid_thread()

    def identity(self, i, h):
        nv = self.nv
        pci = self.call(nv.nvmlDeviceGetPciInfo, h)
        cap = self.call(nv.nvmlDeviceGetCudaComputeCapability, h)
        return {
            "index": i,
            "name": as_str(self.call(nv.nvmlDeviceGetName, h)),
            "uuid": as_str(self.call(nv.nvmlDeviceGetUUID, h)),
            "pci_bus_id": as_str(getattr(pci, "busId", None)) if pci is not None else None,
            "compute_cap": "%d.%d" % tuple(cap) if cap else None,
            "sm_clock_max_mhz": self.call(nv.nvmlDeviceGetMaxClockInfo, h, 1),
            "mem_clock_max_mhz": self.call(nv.nvmlDeviceGetMaxClockInfo, h, 2),
            "pcie_gen_max": self.call(nv.nvmlDeviceGetMaxPcieLinkGeneration, h),
            "pcie_width_max": self.call(nv.nvmlDeviceGetMaxPcieLinkWidth, h),
        }

    def setup_pcie(self):
        mode = self.args.pcie
        if mode == "auto":
            mode = "gpm" if self.handles and all(self.gpm_ok.values()) else "thread"
        if mode == "gpm" and not any(self.gpm_ok.values()):
            mode = "thread"
        self.pcie_mode = mode
        if mode in ("thread", "inline"):
            self.pcie = PcieSampler(self.read_pcie, len(self.handles), self.args.pcie_period)
            if mode == "thread":
                self.pcie.start()

    def read_pcie(self, i):
        h = self.handles[i]
        tx = self.nv.nvmlDeviceGetPcieThroughput(h, 0)  # KB/s
        rx = self.nv.nvmlDeviceGetPcieThroughput(h, 1)
        return (tx * 1024.0 if tx is not None else None, rx * 1024.0 if rx is not None else None)

    def start_xid_thread(self):
        nv = self.nv
        try:
            es = nv.nvmlEventSetCreate()
        except Exception:
            return
        handle_index = {}
        registered = 0
        for i, h in enumerate(self.handles):
            try:
                nv.nvmlDeviceRegisterEvents(h, 0x8, es)  # nvmlEventTypeXidCriticalError
                handle_index[id(h)] = i
                self.xid_count[i] = 0
                registered += 1
            except Exception:
                pass
        if not registered:
            return
        by_bus = dict((s["pci_bus_id"], s["index"]) for s in self.static)

        def loop():
            while True:
                try:
                    data = nv.nvmlEventSetWait_v2(es, 1000)
                except Exception as exc:
                    if "Timeout" in type(exc).__name__ or "imeout" in str(exc):
                        continue
                    return
                idx = None
                try:
                    pci = nv.nvmlDeviceGetPciInfo(data.device)
                    idx = by_bus.get(as_str(pci.busId))
                except Exception:
                    pass
                with self.xid_lock:
                    key = -1 if idx is None else idx
                    self.xid_events.setdefault(key, []).append(int(data.eventData))
                    self.xid_count[key] = self.xid_count.get(key, 0) + 1

        threading.Thread(target=loop, name="xid", daemon=True).start()

    # -- header --------------------------------------------------------------------------

    def header(self):
        nv = self.nv
        gpus = []
        for i, h in enumerate(self.handles):
            s = dict(self.static[i])
            mem = self.memory(h)
            s["memory_total_mib"] = mem[1]
            limit = self.call(nv.nvmlDeviceGetEnforcedPowerLimit, h)
            s["power_limit_w"] = limit / 1000.0 if limit is not None else None
            s["gpm_supported"] = self.gpm_ok.get(i, False)
            gpus.append(s)
        cuda = self.call(nv.nvmlSystemGetCudaDriverVersion)
        nvlink = self.nvlink_state()  # before topology(): it marks NVLink pairs as NV#
        return {
            "driver_version": as_str(self.call(nv.nvmlSystemGetDriverVersion)),
            "nvml_version": as_str(self.call(nv.nvmlSystemGetNVMLVersion)),
            "cuda_version": "%d.%d" % (cuda // 1000, (cuda % 1000) // 10) if cuda else None,
            "gpus": gpus,
            "topology": self.topology(),
            "nvlink": nvlink,
            "nvlink_mode": self.nvlink_mode,
            "pcie_mode": self.pcie_mode,
        }

    def topology(self):
        nv = self.nv
        n = len(self.handles)
        links = [["X" if i == j else None for j in range(n)] for i in range(n)]
        p2p = dict((name, [["X" if i == j else None for j in range(n)] for i in range(n)])
                   for name, _ in P2P_INDICES)
        for i in range(n):
            for j in range(n):
                if i == j:
                    continue
                a, b = self.handles[i], self.handles[j]
                level = self.call(nv.nvmlDeviceGetTopologyCommonAncestor, a, b)
                links[i][j] = TOPO_LEVELS.get(level) if level is not None else None
                for name, idx in P2P_INDICES:
                    code = self.call(nv.nvmlDeviceGetP2PStatus, a, b, idx)
                    p2p[name][i][j] = P2P_CODES.get(code, "U") if code is not None else None
        # NVLink shows in topo -m as NV<links>; CommonAncestor does not see it.
        for (i, j), count in nvlink_pairs(self.nvlink_groups(), p2p["nvlink"]).items():
            links[i][j] = "NV%d" % count
        return {"source": "nvml", "gpus": ["GPU%d" % i for i in range(n)], "links": links,
                "p2p": p2p, "smi": None if self.args.no_smi_topo else smi_topology_text()}

    def nvlink_count(self, h):
        try:
            vals = self.nv.nvmlDeviceGetFieldValues(h, [FI_NVLINK_LINK_COUNT])
        except Exception:
            return None
        v = vals[0]
        if getattr(v, "nvmlReturn", 1) != 0:
            return None
        return int(v.value.uiVal)

    def nvlink_state(self):
        nv = self.nv
        result = []
        any_links = False
        for i, h in enumerate(self.handles):
            count = self.nvlink_count(h)
            links = []
            remotes = {}
            for link in range(count or 0):
                state = self.call(nv.nvmlDeviceGetNvLinkState, h, link)
                if state is None:
                    continue
                remote = self.call(nv.nvmlDeviceGetNvLinkRemotePciInfo, h, link)
                bus = as_str(getattr(remote, "busId", None)) if remote else None
                kind = self.call(nv.nvmlDeviceGetNvLinkRemoteDeviceType, h, link)
                remote_type = NVLINK_REMOTE_TYPES.get(kind, "unknown") if kind is not None \
                    else None
                if state:
                    remotes[link] = (bus, remote_type)
                links.append({
                    "link": link, "active": bool(state),
                    "version": self.call(nv.nvmlDeviceGetNvLinkVersion, h, link),
                    "remote_bus_id": bus, "remote_type": remote_type,
                })
            self.nvlink_active[i] = [x["link"] for x in links if x["active"]]
            self.nvlink_remote[i] = remotes
            any_links = any_links or bool(links)
            result.append({"index": i, "link_count": count, "links": links})
        mode = self.args.nvlink
        for i in range(len(self.handles)):
            if mode == "off" or not self.nvlink_active.get(i):
                continue
            gpm = mode in ("auto", "gpm") and self.gpm_ok.get(i)
            self.nvlink_src[i] = "gpm" if gpm else ("per-link" if mode == "per-link"
                                                      else "all-links")
        return result if any_links else None

    @property
    def nvlink_mode(self):
        """Where NVLink rates come from: gpm, all-links, per-link (mixed: joined by +), off."""
        srcs = sorted(set(self.nvlink_src.values()))
        return "+".join(srcs) if srcs else "off"

    def nvlink_groups(self):
        """{gpu: {"gpus": {peer: direct links}, "switch": links to an NVSwitch}}."""
        by_bus = dict(((s["pci_bus_id"] or "").upper(), s["index"]) for s in self.static)
        out = {}
        for i, remotes in self.nvlink_remote.items():
            out[i] = group_links(i, remotes, by_bus)
        return out

    # -- sample --------------------------------------------------------------------------

    def memory(self, h):
        """(used MiB, total MiB): v2 (what nvidia-smi shows: used excludes reserved)."""
        nv = self.nv
        mem = None
        if self.mem_v2 and hasattr(nv, "nvmlMemory_v2"):
            mem = self.call(nv.nvmlDeviceGetMemoryInfo, h, nv.nvmlMemory_v2)
            if mem is None:
                self.mem_v2 = False
        if mem is None:
            mem = self.call(nv.nvmlDeviceGetMemoryInfo, h)
        if mem is None:
            return None, None
        return mem.used / 1048576.0, mem.total / 1048576.0

    def gpm(self, i, h):
        """GPM metrics between this tick's sample and the last one (None the first time).

        Two sample buffers per GPU, allocated once and used in turn. On a GPU with NVLink the
        same call also gives NVLink RX/TX (metrics 60/61, all links, MiB/s), which saves the
        NVLink field read (~1.2 ms of CPU per GPU measured on an H200)."""
        if not self.gpm_ok.get(i):
            return None
        nv = self.nv
        bufs = self.gpm_bufs.get(i)
        try:
            if bufs is None:
                bufs = self.gpm_bufs[i] = [nv.nvmlGpmSampleAlloc(), nv.nvmlGpmSampleAlloc()]
            cur = bufs[self.tick % 2]
            nv.nvmlGpmSampleGet(h, cur)
        except Exception:
            self.gpm_ok[i] = False
            if self.nvlink_src.get(i) == "gpm":
                self.nvlink_src[i] = "all-links"
            return None
        prev = self.gpm_prev.get(i)
        self.gpm_prev[i] = cur
        if prev is None or prev is cur:
            return None
        ids = GPM_METRICS + (GPM_NVLINK if self.nvlink_src.get(i) == "gpm" else ())
        out = dict((k, None) for k, _ in ids)
        try:
            mg = nv.c_nvmlGpmMetricsGet_t()
            mg.version = nv.NVML_GPM_METRICS_GET_VERSION
            mg.numMetrics = len(ids)
            mg.sample1 = prev
            mg.sample2 = cur
            for k, (_, mid) in enumerate(ids):
                mg.metrics[k].metricId = mid
            nv.nvmlGpmMetricsGet(mg)
            for k, (name, _) in enumerate(ids):
                if mg.metrics[k].nvmlReturn == 0:
                    out[name] = clean_num(mg.metrics[k].value)
        except Exception:
            pass
        if self.nvlink_src.get(i) == "gpm" and (
                out.get("nvlink_tx_mib_s") is None or out.get("nvlink_rx_mib_s") is None):
            self.nvlink_src[i] = "all-links"
            warn("GPU %d: GPM has no NVLink throughput; reading NVLink fields instead" % i)
        return out

    def fields(self, i, h):
        """(memory temperature, NVLink tx KiB, rx KiB, timestamp us): one field read per GPU.

        NVLink throughput (when GPM does not give it) comes from the all-links scope (scopeId
        UINT_MAX, nvml.h): two values per GPU instead of two per link (36 on an 18-link H200,
        ~15 ms of CPU per GPU measured there). A driver that refuses the aggregate falls back
        to per-link scopes."""
        ids = [FI_MEMORY_TEMP]
        links = self.nvlink_active.get(i) or []
        src = self.nvlink_src.get(i)
        if src == "all-links" and links:
            ids += [(FI_NVLINK_TX, ALL_LINKS), (FI_NVLINK_RX, ALL_LINKS)]
        elif src == "per-link" and links:
            for link in links:
                ids += [(FI_NVLINK_TX, link), (FI_NVLINK_RX, link)]
        try:
            vals = self.nv.nvmlDeviceGetFieldValues(h, ids)
        except Exception:
            return None, None, None, None
        mem_temp = clean_num(vals[0].value.uiVal) if vals[0].nvmlReturn == 0 else None
        if len(vals) < 3:
            return mem_temp, None, None, None
        if any(v.nvmlReturn != 0 for v in vals[1:]):
            if src == "all-links":
                self.nvlink_src[i] = "per-link"
                warn("GPU %d: NVLink all-links throughput refused; reading it per link (slower)"
                     % i)
            return mem_temp, None, None, None
        tx = sum(v.value.ullVal for v in vals[1::2])
        rx = sum(v.value.ullVal for v in vals[2::2])
        return mem_temp, tx, rx, vals[1].timestamp

    def nvlink_rates(self, i, tx, rx, ts):
        """Bytes/s since the previous sample from cumulative KiB counters (None the first
        time, or when a counter went backwards: a reset)."""
        if tx is None or rx is None:
            return None, None
        if not ts:
            ts = time.time() * 1e6
        prev = self.nvlink_prev.get(i)
        self.nvlink_prev[i] = (ts, tx, rx)
        if prev is None or ts <= prev[0] or tx < prev[1] or rx < prev[2]:
            return None, None
        dt = (ts - prev[0]) / 1e6
        return (tx - prev[1]) * 1024.0 / dt, (rx - prev[2]) * 1024.0 / dt

    def processes(self, h):
        nv = self.nv
        procs = self.call(nv.nvmlDeviceGetComputeRunningProcesses, h)
        if procs is None:
            return None
        out = []
        for p in procs:
            used = getattr(p, "usedGpuMemory", None)
            out.append(with_info({
                "pid": p.pid,
                "used_mib": used / 1048576.0 if isinstance(used, int) and used < 2 ** 62 else None,
                "name": None,
            }))
        return out

    def sample(self):
        nv = self.nv
        call = self.call
        self.tick += 1
        if self.pcie_mode == "inline" and self.pcie is not None:
            self.pcie.sweep()
        with self.xid_lock:
            xids, self.xid_events = self.xid_events, {}
            xid_count = dict(self.xid_count)
        gpus = []
        for i, h in enumerate(self.handles):
            s = self.static[i]
            util = call(nv.nvmlDeviceGetUtilizationRates, h)
            used, total = self.memory(h)
            power = call(nv.nvmlDeviceGetPowerUsage, h)
            limit = call(nv.nvmlDeviceGetEnforcedPowerLimit, h)
            mask = call(nv.nvmlDeviceGetCurrentClocksEventReasons, h)
            if mask is None:
                mask = call(nv.nvmlDeviceGetCurrentClocksThrottleReasons, h)
            ecc_u = call(nv.nvmlDeviceGetTotalEccErrors, h, 1, 0)
            ecc_c = call(nv.nvmlDeviceGetTotalEccErrors, h, 0, 0)
            gpm = self.gpm(i, h)
            tx = rx = None
            if self.pcie_mode == "gpm" and gpm is not None:
                tx_m, rx_m = gpm.get("pcie_tx_mib_s"), gpm.get("pcie_rx_mib_s")
                tx = tx_m * 1048576.0 if tx_m is not None else None
                rx = rx_m * 1048576.0 if rx_m is not None else None
            elif self.pcie is not None:
                tx, rx = self.pcie.latest(i)
            mem_temp, kib_tx, kib_rx, ts = self.fields(i, h)
            if self.nvlink_src.get(i) == "gpm" and gpm is not None:
                nvl_tx, nvl_rx = mib(gpm.get("nvlink_tx_mib_s")), mib(gpm.get("nvlink_rx_mib_s"))
            else:
                nvl_tx, nvl_rx = self.nvlink_rates(i, kib_tx, kib_rx, ts)
            pstate = call(nv.nvmlDeviceGetPerformanceState, h)
            gpus.append({
                "index": i,
                "name": s["name"],
                "uuid": s["uuid"],
                "pci_bus_id": s["pci_bus_id"],
                "util_gpu": util.gpu if util is not None else None,
                "util_mem": util.memory if util is not None else None,
                "mem_used_mib": used,
                "mem_total_mib": total,
                "power_w": power / 1000.0 if power is not None else None,
                "power_limit_w": limit / 1000.0 if limit is not None else None,
                "temp_c": call(nv.nvmlDeviceGetTemperature, h, 0),
                "mem_temp_c": mem_temp,
                "sm_clock_mhz": call(nv.nvmlDeviceGetClockInfo, h, 1),
                "sm_clock_max_mhz": s["sm_clock_max_mhz"],
                "mem_clock_mhz": call(nv.nvmlDeviceGetClockInfo, h, 2),
                "mem_clock_max_mhz": s["mem_clock_max_mhz"],
                "clock_reasons_mask": mask,
                "clock_reasons": decode_reasons(mask),
                "pcie_gen": call(nv.nvmlDeviceGetCurrPcieLinkGeneration, h),
                "pcie_gen_max": s["pcie_gen_max"],
                "pcie_width": call(nv.nvmlDeviceGetCurrPcieLinkWidth, h),
                "pcie_width_max": s["pcie_width_max"],
                "pcie_tx_bytes_s": tx,
                "pcie_rx_bytes_s": rx,
                "nvlink_tx_bytes_s": nvl_tx,
                "nvlink_rx_bytes_s": nvl_rx,
                "ecc_uncorrected": ecc_u,
                "ecc_corrected": ecc_c,
                "xid_count": xid_count.get(i),
                "xid_new": xids.get(i, []),
                "fan_pct": self.sticky(i, nv.nvmlDeviceGetFanSpeed, h),
                "pstate": "P%d" % pstate if pstate is not None and pstate < 32 else None,
                "processes": self.processes(h),
                "gpm": gpm,
            })
        extra = {"pcie_sweep_ms": self.pcie.sweep_ms if self.pcie is not None else None}
        return gpus, extra


def process_name(pid):
    """The host's name for `pid` (comm, else argv[0]); None if it is not visible here."""
    return process_info(pid)["name"]


CMD_MAX = 300


def process_info(pid):
    """{name, user, uid, cmd} of `pid` as this host sees it (None where not visible: another
    PID namespace, a process that just exited)."""
    info = {"name": None, "user": None, "uid": None, "cmd": None}
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv = [a.decode("utf-8", "replace") for a in f.read().split(b"\0")]
        while argv and not argv[-1]:
            argv.pop()
        if argv:
            name = os.path.basename(argv[0])
            if name.startswith("python") and len(argv) > 2 and argv[1] == "-m":
                name = name + " -m " + argv[2]
            info["name"] = name
            info["cmd"] = " ".join(argv)[:CMD_MAX]
        info["uid"] = os.stat("/proc/%d" % pid).st_uid
    except (OSError, ValueError, TypeError, OverflowError):
        return info
    info["user"] = user_name(info["uid"])
    return info


def user_name(uid):
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError, OverflowError, TypeError):
        return str(uid) if uid is not None else None


class ProcCache:
    """process_info per pid, read once while the pid stays on a GPU (the /proc reads would
    otherwise repeat every tick); forgotten when it leaves."""

    def __init__(self):
        self.known = {}
        self.seen = set()

    def get(self, pid):
        self.seen.add(pid)
        info = self.known.get(pid)
        if info is None or info["uid"] is None:
            info = self.known[pid] = process_info(pid)
        return info

    def prune(self):
        self.known = dict((p, i) for p, i in self.known.items() if p in self.seen)
        self.seen = set()


PROCS = ProcCache()


def with_info(proc):
    info = PROCS.get(proc["pid"])
    out = dict(proc)
    out["name"] = info["name"] or proc.get("name")
    out["user"], out["uid"], out["cmd"] = info["user"], info["uid"], info["cmd"]
    return out


# --------------------------------------------------------------------------------------------
# nvidia-smi backend: one `--query-gpu` per tick, read by column position.


def smi_value(text):
    """A CSV cell -> float, or None for [N/A], [Not Supported], N/A, '' or junk."""
    text = text.strip()
    if not text or text.startswith("[") or text.upper() in ("N/A", "NA", "-"):
        return None
    return clean_num(text)


def smi_text(text):
    text = text.strip()
    if not text or text.startswith("[") or text.upper() == "N/A":
        return None
    return text


def smi_int(text):
    v = smi_value(text)
    return int(v) if v is not None else None


def parse_smi_row(row):
    """One `--query-gpu=SMI_FIELDS` CSV row (noheader, nounits) -> reading dict."""
    cells = [c.strip() for c in row.split(",")]
    if len(cells) < len(SMI_FIELDS):
        return None
    if len(cells) > len(SMI_FIELDS):
        # A GPU name with a comma: merge the extra cells back into the name (column 1).
        extra = len(cells) - len(SMI_FIELDS)
        cells = [cells[0], ", ".join(cells[1:2 + extra]), *cells[2 + extra:]]
    c = dict(zip(SMI_FIELDS, cells))
    mask = None
    reasons_text = c["clocks_event_reasons.active"]
    if reasons_text.lower().startswith("0x"):
        try:
            mask = int(reasons_text, 16)
        except ValueError:
            mask = None
    index = smi_int(c["index"])
    if index is None:
        return None
    return {
        "index": index,
        "name": smi_text(c["name"]),
        "uuid": smi_text(c["uuid"]),
        "pci_bus_id": smi_text(c["pci.bus_id"]),
        "util_gpu": smi_value(c["utilization.gpu"]),
        "util_mem": smi_value(c["utilization.memory"]),
        "mem_used_mib": smi_value(c["memory.used"]),
        "mem_total_mib": smi_value(c["memory.total"]),
        "power_w": smi_value(c["power.draw"]),
        "power_limit_w": smi_value(c["power.limit"]),
        "temp_c": smi_value(c["temperature.gpu"]),
        "mem_temp_c": smi_value(c["temperature.memory"]),
        "sm_clock_mhz": smi_value(c["clocks.sm"]),
        "sm_clock_max_mhz": smi_value(c["clocks.max.sm"]),
        "mem_clock_mhz": smi_value(c["clocks.mem"]),
        "mem_clock_max_mhz": smi_value(c["clocks.max.mem"]),
        "clock_reasons_mask": mask,
        "clock_reasons": decode_reasons(mask),
        "pcie_gen": smi_int(c["pcie.link.gen.gpucurrent"]),
        "pcie_gen_max": smi_int(c["pcie.link.gen.max"]),
        "pcie_width": smi_int(c["pcie.link.width.current"]),
        "pcie_width_max": smi_int(c["pcie.link.width.max"]),
        "pcie_tx_bytes_s": None,
        "pcie_rx_bytes_s": None,
        "ecc_uncorrected": smi_int(c["ecc.errors.uncorrected.volatile.total"]),
        "ecc_corrected": smi_int(c["ecc.errors.corrected.volatile.total"]),
        "fan_pct": smi_value(c["fan.speed"]),
        "pstate": smi_text(c["pstate"]),
        "driver_version": smi_text(c["driver_version"]),
        "processes": None,
        "gpm": None,
    }


def parse_smi_apps(text):
    """`--query-compute-apps=gpu_uuid,pid,process_name,used_memory` rows -> {uuid: [proc]}."""
    out = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) < 4:
            continue
        pid = smi_int(cells[1])
        if pid is None:
            continue
        name = ",".join(cells[2:-1]).strip() or None
        out.setdefault(cells[0], []).append(
            {"pid": pid, "used_mib": smi_value(cells[-1]),
             "name": os.path.basename(name) if name else None})
    return out


class SmiBackend:
    name = "smi"

    def __init__(self, args):
        self.args = args
        self.fields = SMI_FIELDS
        self.tick = 0
        self.apps = {}
        self.pcie_mode = "off"  # nvidia-smi has no throughput query field (dmon -s t only)

    def query(self):
        argv = ["nvidia-smi", "--query-gpu=" + ",".join(self.fields),
                "--format=csv,noheader,nounits"]
        return run_cmd(argv, timeout=15.0)

    def open(self):
        if not shutil.which("nvidia-smi"):
            raise RuntimeError("nvidia-smi not found on PATH")
        code, out = self.query()
        if code == 2 or (code not in (0, None) and "Field" in out):
            self.fields = SMI_FIELDS_OLD  # a pre-R535 driver: same columns, old names
            code, out = self.query()
        if code != 0:
            raise RuntimeError("nvidia-smi failed: " + out.strip().splitlines()[-1]
                               if out.strip() else "nvidia-smi failed (exit %s)" % code)
        self.first = out

    def rows(self, out):
        gpus = []
        for line in out.splitlines():
            r = parse_smi_row(line)
            if r is not None:
                gpus.append(r)
        return gpus

    def header(self):
        gpus = self.rows(self.first)
        return {
            "driver_version": gpus[0].get("driver_version") if gpus else None,
            "nvml_version": None,
            "cuda_version": None,
            "gpus": [identity_of(g) for g in gpus],
            "topology": {"source": "smi", "smi": None if self.args.no_smi_topo
                         else smi_topology_text()},
            "nvlink": None,
            "pcie_mode": self.pcie_mode,
        }

    def sample(self):
        self.tick += 1
        code, out = self.query()
        if code != 0:
            raise RuntimeError("nvidia-smi failed (exit %s)" % code)
        gpus = self.rows(out)
        if self.tick == 1 or self.tick % self.args.slow_every == 0:
            code, apps = run_cmd(["nvidia-smi", "--query-compute-apps="
                                  "gpu_uuid,pid,process_name,used_memory",
                                  "--format=csv,noheader,nounits"])
            self.apps = parse_smi_apps(apps) if code == 0 else {}
        for g in gpus:
            g.pop("driver_version", None)
            g["processes"] = [with_info(p) for p in self.apps.get(g["uuid"], [])]
        return gpus, {}


def identity_of(g):
    keys = ("index", "name", "uuid", "pci_bus_id", "sm_clock_max_mhz", "mem_clock_max_mhz",
            "pcie_gen_max", "pcie_width_max", "memory_total_mib", "power_limit_w")
    out = dict((k, g.get(k)) for k in keys)
    out["memory_total_mib"] = g.get("mem_total_mib")
    out["gpm_supported"] = g.get("gpm") is not None
    return out


# --------------------------------------------------------------------------------------------
# Simulated backend: GPUs driven by the simulator's state file (console/sim/gpu_state.py).

SIM_DEFAULT_NAME = "NVIDIA RTX PRO 6000 Blackwell Server Edition"
SIM_STALE_S = 5.0


def default_sim_state_path():
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return os.path.join(base, "plateau-sim-%d" % os.getuid(), "gpu-state.json")


def pid_alive(pid):
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OSError, ValueError, TypeError, OverflowError):
        return False
    return True


def read_sim_state(path, now):
    """The state dict when fresh and well-formed, else None (the GPUs are then idle)."""
    try:
        with open(path) as f:
            state = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict) or state.get("version") != 1:
        return None
    updated = clean_num(state.get("updated"))
    if updated is None or now - updated > SIM_STALE_S:
        return None
    if not pid_alive(state.get("pid")):
        return None
    if state.get("phase") == "stopped":
        return None
    return state


def unit(x):
    v = clean_num(x)
    return 0.0 if v is None else min(1.0, max(0.0, v))


class SimGpu:
    """One simulated RTX PRO 6000 Server: power capping, thermal inertia, clock events."""

    def __init__(self, index, name, mem_total, rng):
        self.index = index
        self.name = name
        self.mem_total = float(mem_total)
        self.rng = rng
        self.power_limit = 600.0
        self.idle_power = 32.0 + rng.uniform(-3, 3)
        self.sm_max = 2617.0
        self.mem_max = 14001.0
        self.ambient = 28.0 + rng.uniform(-1.5, 1.5)
        self.temp = self.ambient + 8.0
        self.uuid = "GPU-%08x-%04x-%04x-%04x-%012x" % (
            rng.getrandbits(32), rng.getrandbits(16), rng.getrandbits(16),
            rng.getrandbits(16), rng.getrandbits(48))
        self.bus = "00000000:%02X:00.0" % (0x18 + index * 0x10 if index < 14 else 0x10 + index)

    def identity(self):
        return {"index": self.index, "name": self.name, "uuid": self.uuid,
                "pci_bus_id": self.bus, "compute_cap": "12.0",
                "sm_clock_max_mhz": self.sm_max, "mem_clock_max_mhz": self.mem_max,
                "pcie_gen_max": 5, "pcie_width_max": 16, "memory_total_mib": self.mem_total,
                "power_limit_w": self.power_limit, "gpm_supported": True}

    def read(self, g, dt, procs):
        rng = self.rng
        activity = unit(g.get("activity")) if g else 0.0
        tensor = unit(g.get("tensor_activity")) if g else 0.0
        in_use = bool(g.get("in_use")) if g else False
        used = clean_num(g.get("memory_used_mib")) if g else None
        used = min(self.mem_total, max(0.0, used)) if used is not None else 0.0
        limit = clean_num(g.get("power_limit_w")) if g else None
        if limit is not None and limit > 0:
            self.power_limit = limit  # the simulated board's limit (`nvidia-smi -pl`)
        ambient = clean_num(g.get("ambient_c")) if g else None
        if ambient is not None and abs(ambient - 28.0) > 0.01:
            self.ambient = ambient  # the simulated host's cooling (28 C: keep the jitter)
        hot = bool(g.get("thermal_slowdown")) if g else False
        busy = activity > 0.01
        sm_activity = clean_num(g.get("sm_activity")) if g else None
        base = self.idle_power + (45.0 if in_use else 0.0)
        if sm_activity is None:  # a state file before sm_activity: activity is SM time
            util = min(100.0, 100.0 * math.sqrt(activity) + rng.uniform(-1.5, 1.5)) \
                if busy else 0.0
            sm_activity = activity
        else:  # NVML utilization.gpu: share of the period with any kernel running
            util = min(100.0, 100.0 * activity + rng.uniform(-1.0, 0.0)) if busy else 0.0
        demand = base + 720.0 * unit(sm_activity) * (0.55 + 0.45 * tensor)
        told = g.get("power_capped") if g else None
        # The simulator says when its modelled clock was cut by the limit; reading the cap off
        # a window average would flag a cap the GPU never hit (or miss one it did).
        capped = bool(told) if isinstance(told, bool) else demand > self.power_limit * 0.97
        power = min(demand, self.power_limit * 0.975) + rng.uniform(-2.0, 2.0)
        # Thermal inertia: first-order lag towards the steady temperature for this power.
        target = self.ambient + 12.0 + power * 0.085
        self.temp += (target - self.temp) * (1.0 - math.exp(-dt / 25.0))
        ratio = clean_num(g.get("sm_clock_ratio")) if g else None
        if ratio is not None and busy:
            sm = self.sm_max * min(1.0, max(0.1, ratio)) - rng.uniform(0, 30) * (ratio >= 0.99)
        elif capped:
            sm = self.sm_max * math.sqrt(self.power_limit * 0.975 / demand)
        elif busy or in_use:
            sm = self.sm_max - rng.uniform(0, 30)
        else:
            sm = 180.0
        mask = 0x4 if capped else (0x1 if not busy else 0)
        if hot:  # the simulator runs thermally slowed: say so, at its clock
            mask |= 0x20
            sm = min(sm, self.sm_max * 0.6)
            self.temp = max(self.temp, 92.5)
        tx = clean_num(g.get("pcie_tx_bytes_per_s")) if g else None
        rx = clean_num(g.get("pcie_rx_bytes_per_s")) if g else None
        return {
            "index": self.index, "name": self.name, "uuid": self.uuid, "pci_bus_id": self.bus,
            "util_gpu": round(max(0.0, util)), "util_mem": round(100.0 * activity * 0.6),
            "mem_used_mib": round(used, 1), "mem_total_mib": self.mem_total,
            "power_w": round(max(5.0, power), 2), "power_limit_w": self.power_limit,
            "temp_c": round(self.temp), "mem_temp_c": None,
            "sm_clock_mhz": round(sm), "sm_clock_max_mhz": self.sm_max,
            "mem_clock_mhz": self.mem_max if (busy or in_use) else 405.0,
            "mem_clock_max_mhz": self.mem_max,
            "clock_reasons_mask": mask, "clock_reasons": decode_reasons(mask),
            "pcie_gen": 5 if (busy or in_use) else 1, "pcie_gen_max": 5,
            "pcie_width": 16, "pcie_width_max": 16,
            "pcie_tx_bytes_s": max(0.0, tx) if tx is not None else 0.0,
            "pcie_rx_bytes_s": max(0.0, rx) if rx is not None else 0.0,
            "nvlink_tx_bytes_s": None, "nvlink_rx_bytes_s": None,
            "ecc_uncorrected": 0, "ecc_corrected": 0, "xid_count": 0, "xid_new": [],
            "fan_pct": None, "pstate": "P1" if (busy or in_use) else "P8",
            "processes": procs,
            "gpm": {"sm_util": round(100.0 * activity, 1),
                    "sm_occupancy": round(100.0 * activity * 0.3, 1),
                    "tensor_util": round(100.0 * tensor, 1),
                    "dram_bw_util": round(100.0 * activity * (1.0 - 0.5 * tensor), 1),
                    "pcie_tx_mib_s": None, "pcie_rx_mib_s": None},
        }


class SimBackend:
    name = "sim"

    def __init__(self, args):
        self.args = args
        self.path = args.sim_state or default_sim_state_path()
        self.rng = random.Random(args.sim_seed)
        self.last = None
        self.gpus = []

    def open(self):
        state = read_sim_state(self.path, time.time())
        n = self.args.sim_gpus
        name = self.args.sim_gpu_name
        mem = 97887.0
        if state is not None:
            n = int(clean_num(state.get("num_gpus")) or n)
            name = as_str(state.get("gpu_name")) or name
            mem = clean_num(state.get("memory_total_mib")) or mem
        n = max(1, min(64, n))
        self.gpus = [SimGpu(i, name, mem, self.rng) for i in range(n)]

    def header(self):
        n = len(self.gpus)
        half = n if n <= 4 else n // 2  # up to 4 GPUs on one socket, else two
        # Two sockets of PCIe-only GPUs: NODE within a socket, SYS across (no NVLink).
        links = [["X" if i == j else ("NODE" if i // half == j // half else "SYS")
                  for j in range(n)] for i in range(n)]
        p2p = dict((name, [["X" if i == j else ("NS" if name in ("nvlink", "atomics") else "OK")
                            for j in range(n)] for i in range(n)]) for name, _ in P2P_INDICES)
        # A fictional two-socket, 64-cores-per-socket server (the sim's, not this machine's).
        affinity = ["%d-%d" % ((i // half) * 64, (i // half) * 64 + 63) if n > 1 else "0-63"
                    for i in range(n)]
        return {
            "driver_version": "580.95.05 (sim)", "nvml_version": None, "cuda_version": "13.0",
            "gpus": [g.identity() for g in self.gpus],
            "topology": {"source": "sim", "gpus": ["GPU%d" % i for i in range(n)],
                         "links": links, "p2p": p2p, "cpu_affinity": affinity,
                         "numa_affinity": [str(i // half) if n > 1 else "0" for i in range(n)],
                         "smi": None},
            "nvlink": None, "pcie_mode": "sim", "sim_state_path": self.path,
        }

    def sample(self):
        now = time.time()
        dt = self.args.interval if self.last is None else max(0.01, now - self.last)
        self.last = now
        state = read_sim_state(self.path, now)
        by_index = {}
        if state is not None:
            for g in state.get("gpus") or []:
                if isinstance(g, dict) and isinstance(g.get("index"), int):
                    by_index[g["index"]] = g
        pid = state.get("pid") if state is not None else None
        out = []
        for gpu in self.gpus:
            g = by_index.get(gpu.index)
            procs = []
            if g is not None and g.get("in_use") and isinstance(pid, int):
                procs = [with_info({"pid": pid, "used_mib": clean_num(g.get("memory_used_mib")),
                                    "name": None})]
                procs[0]["name"] = "sglang::scheduler_TP%d" % gpu.index
            out.append(gpu.read(g, dt, procs))
        sim = None
        if state is not None:
            sim = {"phase": as_str(state.get("phase")),
                   "tokens_per_s": clean_num(state.get("tokens_per_s")),
                   "running": clean_num(state.get("running")),
                   "queued": clean_num(state.get("queued"))}
        return out, {"sim": sim, "sim_state": "live" if state is not None else "idle"}


# --------------------------------------------------------------------------------------------


def make_backend(args):
    """The backend to use, or exits with one clear error line."""
    if args.backend == "sim":
        sim = SimBackend(args)
        sim.open()
        return sim
    errors = []
    if args.backend in ("auto", "nvml"):
        try:
            import pynvml
        except Exception as exc:  # ImportError, or a broken install
            pynvml = None
            errors.append("pynvml (nvidia-ml-py) not importable: %s" % exc)
        if pynvml is not None:
            backend = NvmlBackend(pynvml, args)
            try:
                backend.open()
                return backend
            except Exception as exc:
                errors.append("NVML: %s" % (str(exc) or type(exc).__name__))
        if args.backend == "nvml":
            fatal("no_nvml", "; ".join(errors), EXIT_NO_DRIVER)
    backend = SmiBackend(args)
    try:
        backend.open()
        return backend
    except Exception as exc:
        errors.append(str(exc))
    fatal("no_driver", "no NVIDIA driver found on %s: %s"
          % (socket.gethostname(), "; ".join(errors)), EXIT_NO_DRIVER)


def parse_args(argv):
    p = argparse.ArgumentParser(prog="plateau-gpu-agent")
    p.add_argument("--backend", choices=("auto", "nvml", "smi", "sim"), default="auto")
    p.add_argument("--interval", type=float, default=1.0)
    p.add_argument("--count", type=int, default=0, help="stop after N samples (0: forever)")
    p.add_argument("--pcie", choices=("auto", "thread", "gpm", "inline", "off"), default="auto",
                   help="PCIe throughput source: background thread (blocking NVML call), GPM, "
                        "inline on the sampling path (to measure its cost), or off")
    p.add_argument("--no-pcie", action="store_true", help="same as --pcie off")
    p.add_argument("--nvlink", choices=("auto", "gpm", "fields", "per-link", "off"),
                   default="auto", help="NVLink throughput source: GPM where supported, else "
                   "the all-links field read (auto); fields: always the field read; per-link: "
                   "one field per link (the old, slow form, to measure it)")
    p.add_argument("--no-gpm", action="store_true",
                   help="take no GPM samples (PCIe then from the background thread)")
    p.add_argument("--pcie-period", type=float, default=1.0)
    p.add_argument("--slow-every", type=int, default=5, help="smi: processes every N ticks")
    p.add_argument("--no-xid", action="store_true")
    p.add_argument("--no-smi-topo", action="store_true")
    p.add_argument("--sim-state", default=None)
    p.add_argument("--sim-gpus", type=int, default=8)
    p.add_argument("--sim-gpu-name", default=SIM_DEFAULT_NAME)
    p.add_argument("--sim-seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.no_pcie:
        args.pcie = "off"
    if not args.interval >= MIN_INTERVAL:
        args.interval = MIN_INTERVAL
    args.slow_every = max(1, args.slow_every)
    return args


def main(argv):
    args = parse_args(argv)
    backend = make_backend(args)
    head = backend.header()
    head.update({"type": "header", "backend": backend.name, "interval": args.interval,
                 "host": host_info(backend.name), "t": time.time()})
    emit(head)
    seq = 0
    next_at = time.monotonic()
    failures = 0
    cpu_prev = time.process_time()  # every thread of this process (ns resolution)
    while True:
        seq += 1
        t0 = time.perf_counter()
        try:
            gpus, extra = backend.sample()
            failures = 0
        except Exception as exc:
            failures += 1
            warn("sample failed: %s" % exc)
            if failures >= 5:
                fatal("sampling_failed", "5 samples in a row failed: %s" % exc, 1)
            gpus, extra = None, {}
        if gpus is not None:
            cost = now_ms(t0)
            cpu_now = time.process_time()
            # What the agent cost the host since the last sample, its threads included
            # (PCIe sweeps, XID waits, the previous line's JSON): the figure to budget.
            line = {"type": "sample", "seq": seq, "t": time.time(), "cost_ms": cost,
                    "agent_cpu_ms": round((cpu_now - cpu_prev) * 1000.0, 3), "gpus": gpus}
            cpu_prev = cpu_now
            line.update(extra)
            emit(line)
        PROCS.prune()
        if args.count and seq >= args.count:
            return 0
        next_at += args.interval
        delay = next_at - time.monotonic()
        if delay < 0:  # fell behind (slow host): skip ticks rather than burst
            next_at = time.monotonic()
            delay = 0
        time.sleep(delay)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
