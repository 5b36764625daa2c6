"""Simulated GPU load, published as a JSON state file for the telemetry agent's "sim" backend.

The simulator does not fake NVML. It writes what its GPUs would be doing; the agent
(console/gpu/agent.py, stdlib only) reads this file and turns it into the same samples it makes
from NVML (utilisation, memory, power, clocks, temperature, PCIe are derived there).

Contract (version 1):

* Path: ``--sim-state-file``, default
  ``os.path.join(os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir(),
  f"plateau-sim-{os.getuid()}", "gpu-state.json")`` (see ``default_state_file()``).
* Written atomically (temporary file in the same directory, then ``os.replace``) every 0.25 s
  and on every phase change. On exit the simulator writes phase ``"stopped"`` with all memory
  back to 0.
* Content::

    {"version": 1, "pid": int, "updated": unix_time_float,
     "phase": "starting"|"loading"|"capturing"|"ready"|"draining"|"stopped",
     "gpu_name": str, "num_gpus": int, "memory_total_mib": int,
     "gpus": [{"index": i, "in_use": bool, "memory_used_mib": float,
               "activity": 0..1,          # fraction of the last window a kernel ran (any
                                          # step, all-reduce included): NVML's utilization.gpu
               "sm_activity": 0..1,       # fraction of the window the SMs computed (power)
               "tensor_activity": 0..1,   # fraction of the window the tensor cores were busy
               "sm_clock_ratio": 0..1,    # SM clock / max, averaged over the busy time
               "power_capped": bool,      # most of the busy time ran with the clock cut by the
                                          # power limit (modelled demand above the limit)
               "thermal_slowdown": bool,  # most of the busy time ran thermally slowed
               "pcie_tx_bytes_per_s": float, "pcie_rx_bytes_per_s": float}, ...],
     "tokens_per_s": float, "running": int, "queued": int}

* A reader should treat a file whose ``updated`` is older than a few seconds, or whose ``pid``
  is not alive, as "stopped".

``compute_state()`` is a pure function of its inputs so the agent's tests can build files.
``GpuSampler`` reads the engine's cumulative GPU-time counters (the step in progress included)
at each write, so every figure is a counter difference over the sample period, as NVML's are:
a window inside one long step reads busy, not 0 (a window that saw only finished steps used
to read 0 or 1 when steps were as long as the window, and the GPU panel flickered).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from console.sim.args import default_state_file

if TYPE_CHECKING:
    from console.sim.config import SimConfig
    from console.sim.engine import EngineStats

__all__ = ["PHASES", "GpuLoad", "GpuSampler", "compute_state", "default_state_file",
           "write_state"]

PHASES = ("starting", "loading", "capturing", "ready", "draining", "stopped")
CONTEXT_MIB = 520.0  # CUDA context + driver reservation per GPU a process holds


@dataclass(frozen=True)
class GpuLoad:
    """One window of load, as the simulator measured it."""

    phase: str
    gpus_in_use: int  # ranks: tp * dp, on GPUs base_gpu_id.. (clamped to num_gpus)
    base_gpu_id: int = 0
    memory_used_mib: float = 0.0  # per in-use GPU
    activity: float = 0.0  # kernel time share of the window (utilisation)
    tensor_activity: float = 0.0
    sm_activity: float | None = None  # SM compute share (None: same as activity)
    sm_clock_ratio: float = 1.0
    power_capped: bool = False
    pcie_bytes_per_s: float = 0.0  # per in-use GPU, each direction
    tokens_per_s: float = 0.0
    running: int = 0
    queued: int = 0
    power_limit_w: float = 600.0  # board limit the agent caps power and clocks at
    ambient_c: float = 28.0  # intake air: the agent's temperature model starts from it
    thermal_slowdown: bool = False  # the engine is running thermally slowed


def compute_state(
    load: GpuLoad,
    *,
    gpu_name: str,
    num_gpus: int,
    memory_total_mib: int,
    pid: int,
    now: float | None = None,
) -> dict[str, Any]:
    """The JSON document for one snapshot. Pure: same inputs, same dict."""
    if load.phase not in PHASES:
        raise ValueError(f"unknown phase {load.phase!r}")
    stopped = load.phase == "stopped"
    gpus = []
    for index in range(num_gpus):
        in_use = not stopped and load.base_gpu_id <= index < load.base_gpu_id + load.gpus_in_use
        gpus.append(
            {
                "index": index,
                "in_use": in_use,
                "memory_used_mib": round(min(load.memory_used_mib, memory_total_mib), 1)
                if in_use
                else 0.0,
                "activity": round(_unit(load.activity), 4) if in_use else 0.0,
                "tensor_activity": round(_unit(load.tensor_activity), 4) if in_use else 0.0,
                "pcie_tx_bytes_per_s": round(load.pcie_bytes_per_s, 1) if in_use else 0.0,
                "pcie_rx_bytes_per_s": round(load.pcie_bytes_per_s, 1) if in_use else 0.0,
                "power_limit_w": load.power_limit_w,
                "ambient_c": load.ambient_c,
                "thermal_slowdown": bool(load.thermal_slowdown and in_use and load.activity),
                "sm_activity": round(_unit(load.activity if load.sm_activity is None
                                           else load.sm_activity), 4) if in_use else 0.0,
                "sm_clock_ratio": round(_unit(load.sm_clock_ratio), 4),
                "power_capped": bool(load.power_capped and in_use and load.activity),
            }
        )
    return {
        "version": 1,
        "pid": pid,
        "updated": time.time() if now is None else now,
        "phase": load.phase,
        "gpu_name": gpu_name,
        "num_gpus": num_gpus,
        "memory_total_mib": memory_total_mib,
        "gpus": gpus,
        "tokens_per_s": 0.0 if stopped else round(load.tokens_per_s, 2),
        "running": 0 if stopped else load.running,
        "queued": 0 if stopped else load.queued,
    }


class GpuSampler:
    """GPU figures over each sample period from the engine's counters (console.sim.engine
    `GpuCounters`): `sample(now)` returns the load since the previous call."""

    def __init__(self, cfg: SimConfig, stats: EngineStats) -> None:
        self.cfg = cfg
        self.stats = stats
        self._last: tuple[float, Any, float, int] | None = None

    def sample(self, now: float, phase: str, *, running: int = 0, queued: int = 0,
               memory_used_mib: float = 0.0) -> GpuLoad:
        stats = self.stats
        counters = stats.counters(now)
        mark = (now, counters, stats.pcie_bytes, stats.generation_tokens_total)
        prev = self._last or mark
        self._last = mark
        dt = max(1e-3, now - prev[0])
        before = prev[1]
        busy = max(0.0, counters.busy_s - before.busy_s)
        serving = phase in ("ready", "draining")
        activity = _unit(busy / dt) if serving else (0.35 if phase == "capturing" else 0.0)
        sm = _unit((counters.sm_busy_s - before.sm_busy_s) / dt) if serving else activity
        prefill = _unit((counters.prefill_busy_s - before.prefill_busy_s) / busy) if busy else 0.0
        clock = (counters.clock_s - before.clock_s) / busy if busy else 1.0
        capped = busy > 0 and (counters.power_capped_s - before.power_capped_s) >= 0.5 * busy
        hot = busy > 0 and (counters.thermal_s - before.thermal_s) >= 0.5 * busy
        sim = self.cfg.sim
        return GpuLoad(
            phase=phase,
            gpus_in_use=self.cfg.gpus_in_use(),
            base_gpu_id=int(self.cfg.server_args.get("base_gpu_id") or 0),
            memory_used_mib=memory_used_mib + (300.0 * activity if activity else 0.0),
            activity=activity,
            sm_activity=sm,
            tensor_activity=sm * (0.45 + 0.45 * prefill),
            sm_clock_ratio=clock if serving else 1.0,
            power_capped=capped and serving,
            pcie_bytes_per_s=(mark[2] - prev[2]) / dt,
            tokens_per_s=(mark[3] - prev[3]) / dt,
            running=running,
            queued=queued,
            power_limit_w=sim.power_limit_w,
            ambient_c=sim.ambient_c,
            thermal_slowdown=hot and serving,
        )


def write_state(path: str, state: dict[str, Any]) -> None:
    """Atomic write: readers never see a partial file."""
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, mode=0o700, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".gpu-state-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(state, handle, separators=(",", ":"))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _unit(value: float) -> float:
    return 0.0 if value < 0 else 1.0 if value > 1 else value
