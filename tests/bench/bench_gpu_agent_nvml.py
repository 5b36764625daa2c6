"""The agent's cost per sample on real GPUs (NVML), and what each NVML call in it costs, for
the device machine. Peers measured in the same run: the agent file given by --before (e.g.
the previous version, to say before/after), and the NVLink throughput read both ways (per
link, all links at once).

    python3 tests/bench/bench_gpu_agent_nvml.py [--samples 40] [--before OLD_AGENT.py]

Prints one JSON line per figure: CPU ms (process time) and wall ms, median and max; and the
agent run as a subprocess, as on a host, where every thread's CPU counts (its PCIe and XID
threads too): the agent's own agent_cpu_ms per sample.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import statistics
import sys
import time
from contextlib import redirect_stdout
from pathlib import Path
from types import ModuleType
from typing import Any

AGENT = Path(__file__).resolve().parents[2] / "console" / "gpu" / "agent.py"


def load_agent(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed(fn: Any, n: int) -> dict[str, float]:
    """Median and max CPU and wall milliseconds of `fn()` over `n` calls."""
    cpu: list[float] = []
    wall: list[float] = []
    for _ in range(n):
        c0, w0 = time.process_time(), time.perf_counter()
        fn()
        cpu.append((time.process_time() - c0) * 1e3)
        wall.append((time.perf_counter() - w0) * 1e3)
    return {"cpu_ms_median": round(statistics.median(cpu), 3), "cpu_ms_max": round(max(cpu), 3),
            "wall_ms_median": round(statistics.median(wall), 3),
            "wall_ms_max": round(max(wall), 3)}


def report(label: str, **fields: Any) -> None:
    print(json.dumps({"what": label, **fields}), flush=True)


def agent_samples(module: ModuleType, label: str, samples: int, interval: float) -> None:
    import pynvml

    args = module.parse_args(["--backend", "nvml", "--no-xid", "--no-smi-topo"])
    backend = module.NvmlBackend(pynvml, args)
    backend.open()
    with redirect_stdout(io.StringIO()):
        header = backend.header()
        backend.sample()  # first GPM/NVLink samples have no previous one
    cpu: list[float] = []
    wall: list[float] = []
    for _ in range(samples):
        time.sleep(interval)
        c0, w0 = time.process_time(), time.perf_counter()
        with redirect_stdout(io.StringIO()):
            gpus, _ = backend.sample()
        cpu.append((time.process_time() - c0) * 1e3)
        wall.append((time.perf_counter() - w0) * 1e3)
    n = len(gpus)
    report(label, gpus=n, nvlink_mode=header.get("nvlink_mode", "per-link"),
           links=header["topology"]["links"],
           cpu_ms_median=round(statistics.median(cpu), 3), cpu_ms_max=round(max(cpu), 3),
           wall_ms_median=round(statistics.median(wall), 3), wall_ms_max=round(max(wall), 3),
           cpu_ms_per_gpu=round(statistics.median(cpu) / max(1, n), 3),
           nvlink_tx=[g.get("nvlink_tx_bytes_s") for g in gpus])


def agent_cpu(path: Path, label: str, extra: list[str], samples: int) -> None:
    """The agent as it runs on a host (a subprocess at 4 Hz): its own per-sample report of
    process CPU, every thread counted (agent_cpu_ms); an older agent without that field gets
    its cost_ms (the sampling path only)."""
    import subprocess

    proc = subprocess.run([sys.executable, str(path), "--backend", "nvml", "--count",
                           str(samples + 2), "--interval", "0.25", "--no-smi-topo", *extra],
                          capture_output=True, text=True, check=False)
    lines = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith('{"type":"sample"')]
    steady = lines[2:]  # the first samples start GPM/NVLink baselines
    cpu = [x["agent_cpu_ms"] for x in steady if x.get("agent_cpu_ms") is not None]
    cost = [x["cost_ms"] for x in steady if x.get("cost_ms") is not None]
    report(label, args=extra, samples=len(steady),
           agent_cpu_ms_median=round(statistics.median(cpu), 3) if cpu else None,
           agent_cpu_ms_max=round(max(cpu), 3) if cpu else None,
           cost_ms_median=round(statistics.median(cost), 3) if cost else None,
           nvlink_tx=[g.get("nvlink_tx_bytes_s") for g in steady[-1]["gpus"]] if steady else None)


def gpm_costs(reps: int) -> None:
    """GPM on GPU 0: one sample read, one metrics computation; NVLink from GPM beside the
    all-links field counters over the same second."""
    import pynvml as nv

    nv.nvmlInit()
    h = nv.nvmlDeviceGetHandleByIndex(0)
    a, b = nv.nvmlGpmSampleAlloc(), nv.nvmlGpmSampleAlloc()
    nv.nvmlGpmSampleGet(h, a)
    report("nvml call on GPU 0: gpm sample get", **timed(lambda: nv.nvmlGpmSampleGet(h, b), reps))
    ids = [2, 3, 5, 10, 20, 21, 60, 61]

    def metrics(n: int) -> Any:
        mg = nv.c_nvmlGpmMetricsGet_t()
        mg.version = nv.NVML_GPM_METRICS_GET_VERSION
        mg.numMetrics = n
        mg.sample1, mg.sample2 = a, b
        for k in range(n):
            mg.metrics[k].metricId = ids[k]
        nv.nvmlGpmMetricsGet(mg)
        return mg

    report("nvml call on GPU 0: gpm metrics get (6 metrics)", **timed(lambda: metrics(6), reps))
    report("nvml call on GPU 0: gpm metrics get (8, + NVLink)", **timed(lambda: metrics(8), reps))
    fields = [(138, 0xFFFFFFFF), (139, 0xFFFFFFFF)]
    nv.nvmlGpmSampleGet(h, a)
    f0 = nv.nvmlDeviceGetFieldValues(h, fields)
    t0 = time.perf_counter()
    time.sleep(1.0)
    nv.nvmlGpmSampleGet(h, b)
    f1 = nv.nvmlDeviceGetFieldValues(h, fields)
    dt = time.perf_counter() - t0
    mg = metrics(8)
    report("nvlink GPU 0 over 1 s: GPM vs all-links fields (bytes/s)",
           gpm_rx=mg.metrics[6].value * 1048576.0, gpm_tx=mg.metrics[7].value * 1048576.0,
           gpm_ret=[mg.metrics[6].nvmlReturn, mg.metrics[7].nvmlReturn],
           fields_tx=(f1[0].value.ullVal - f0[0].value.ullVal) * 1024.0 / dt,
           fields_rx=(f1[1].value.ullVal - f0[1].value.ullVal) * 1024.0 / dt)


def call_costs(reps: int) -> None:
    """Each NVML call of one sample, on GPU 0."""
    import pynvml as nv

    nv.nvmlInit()
    h = nv.nvmlDeviceGetHandleByIndex(0)
    links = []
    for link in range(18):
        try:
            if nv.nvmlDeviceGetNvLinkState(h, link):
                links.append(link)
        except Exception:
            break
    per_link = [(f, link) for link in links for f in (138, 139)]
    all_links = [(138, 0xFFFFFFFF), (139, 0xFFFFFFFF)]

    def safe(fn: Any, *a: Any) -> Any:
        def call() -> Any:
            try:
                return fn(*a)
            except Exception:
                return None
        return call

    calls = {
        "utilization": safe(nv.nvmlDeviceGetUtilizationRates, h),
        "memory_v2": safe(nv.nvmlDeviceGetMemoryInfo, h, nv.nvmlMemory_v2),
        "power": safe(nv.nvmlDeviceGetPowerUsage, h),
        "power_limit": safe(nv.nvmlDeviceGetEnforcedPowerLimit, h),
        "clock_reasons": safe(nv.nvmlDeviceGetCurrentClocksEventReasons, h),
        "ecc_x2": lambda: (safe(nv.nvmlDeviceGetTotalEccErrors, h, 1, 0)(),
                           safe(nv.nvmlDeviceGetTotalEccErrors, h, 0, 0)()),
        "temperature": safe(nv.nvmlDeviceGetTemperature, h, 0),
        "clocks_x2": lambda: (safe(nv.nvmlDeviceGetClockInfo, h, 1)(),
                              safe(nv.nvmlDeviceGetClockInfo, h, 2)()),
        "pcie_gen_width": lambda: (safe(nv.nvmlDeviceGetCurrPcieLinkGeneration, h)(),
                                   safe(nv.nvmlDeviceGetCurrPcieLinkWidth, h)()),
        "fan (unsupported)": safe(nv.nvmlDeviceGetFanSpeed, h),
        "pstate": safe(nv.nvmlDeviceGetPerformanceState, h),
        "processes": safe(nv.nvmlDeviceGetComputeRunningProcesses, h),
        "field mem_temp": safe(nv.nvmlDeviceGetFieldValues, h, [82]),
        f"field nvlink per-link ({len(per_link)} values)": safe(
            nv.nvmlDeviceGetFieldValues, h, per_link),
        "field nvlink all-links (2 values)": safe(nv.nvmlDeviceGetFieldValues, h, all_links),
        "field mem_temp + nvlink all-links": safe(
            nv.nvmlDeviceGetFieldValues, h, [82, *all_links]),
    }
    for name, fn in calls.items():
        report("nvml call on GPU 0: " + name, **timed(fn, reps))
    if links:
        per = nv.nvmlDeviceGetFieldValues(h, per_link)
        agg = nv.nvmlDeviceGetFieldValues(h, all_links)
        report("nvlink counters, KiB (sum of per-link vs all-links scope)",
               per_link_tx=sum(v.value.ullVal for v in per[0::2]),
               all_links_tx=agg[0].value.ullVal, all_links_ret=[v.nvmlReturn for v in agg])
        kinds = []
        for link in links:
            try:
                kinds.append(nv.nvmlDeviceGetNvLinkRemoteDeviceType(h, link))
            except Exception as exc:
                kinds.append(type(exc).__name__)
        report("nvlink remote device types (GPU 0)", types=kinds,
               versions=[nv.nvmlDeviceGetNvLinkVersion(h, link) for link in links[:2]])
    n = nv.nvmlDeviceGetCount()
    if n > 1:
        b = nv.nvmlDeviceGetHandleByIndex(1)
        report("p2p status GPU0->GPU1", **{
            name: safe(nv.nvmlDeviceGetP2PStatus, h, b, idx)()
            for name, idx in (("read", 0), ("write", 1), ("nvlink", 2), ("atomics", 3))})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=40)
    ap.add_argument("--interval", type=float, default=0.1)
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--before", type=Path, default=None, help="an older agent.py to compare")
    ns = ap.parse_args()
    agent_samples(load_agent(AGENT, "agent_now"), "agent sample (this tree)", ns.samples,
                  ns.interval)
    if ns.before is not None:
        agent_samples(load_agent(ns.before, "agent_before"), f"agent sample ({ns.before.name})",
                      ns.samples, ns.interval)
    variants: list[tuple[Path, str, list[str]]] = [
        (AGENT, "agent process (this tree, default)", []),
        (AGENT, "agent process (this tree, NVLink from fields)", ["--nvlink", "fields"]),
        (AGENT, "agent process (this tree, no GPM: PCIe thread)", ["--no-gpm"]),
    ]
    if ns.before is not None:
        variants.append((ns.before, f"agent process ({ns.before.name})", []))
    for path, label, extra in variants:
        agent_cpu(path, label, extra, ns.samples)
    gpm_costs(ns.reps)
    call_costs(ns.reps)


if __name__ == "__main__":
    main()
