"""GPU test data: deterministic simulated samples (the agent's own SimGpu model, fixed dt),
recorded real-H200 agent output, a fake pynvml on PYTHONPATH, and a widget host App."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import cast

import pytest
from textual.theme import Theme

from console.gpu import agent
from console.gpu.collector import parse_lines
from console.gpu.models import GpuHeader, GpuSample

GPU_DATA = Path(__file__).resolve().parent.parent / "data" / "gpu"
H200_DIR = GPU_DATA / "h200_x1"
FAKE_PYNVML_DIR = GPU_DATA / "fake_pynvml"
THEME_FILE = Path(__file__).resolve().parents[2] / "themes" / "plateau-dark.toml"


def sim_series(n_gpus: int, count: int, *, seed: int = 7, dt: float = 1.0) -> tuple[
    GpuHeader, list[GpuSample]
]:
    """`count` ticks of `n_gpus` simulated GPUs under a varied, deterministic load: GPU 0 is
    power capped, the last one idle, the rest ramping; PCIe traffic on the busy ones."""
    rng = random.Random(seed)
    name = agent.SIM_DEFAULT_NAME
    gpus = [agent.SimGpu(i, name, 97887.0, rng) for i in range(n_gpus)]
    samples: list[GpuSample] = []
    for k in range(count):
        readings = []
        for g in gpus:
            idle = n_gpus > 1 and g.index == n_gpus - 1
            phase = (k / max(1, count - 1)) if count > 1 else 1.0
            activity = 0.0 if idle else (1.0 if g.index == 0 else
                                         0.25 + 0.6 * phase * (0.5 + 0.5 * math.sin(g.index)))
            state = None if idle else {
                "in_use": True, "memory_used_mib": 85000.0 - 900.0 * g.index,
                "activity": activity, "tensor_activity": 0.8 * activity,
                "pcie_tx_bytes_per_s": 4.0e9 * activity, "pcie_rx_bytes_per_s": 3.1e9 * activity,
            }
            procs = [] if idle else [{"pid": 4242, "used_mib": 85000.0 - 900.0 * g.index,
                                      "name": f"sglang::scheduler_TP{g.index}"}]
            readings.append(g.read(state, dt, procs))
        samples.append(GpuSample.model_validate(
            {"type": "sample", "seq": k + 1, "t": 1.8e9 + k * dt, "cost_ms": 0.21,
             "gpus": readings}))
    header_dict = agent.SimBackend.header(cast(agent.SimBackend, _FakeSim(gpus)))
    header_dict.update({"type": "header", "backend": "sim", "interval": dt,
                        "host": {"hostname": "gpu-box-1"}})
    header = parse_lines([_json(header_dict)])[0]
    assert isinstance(header, GpuHeader)
    return header, samples


class _FakeSim:
    def __init__(self, gpus: list[agent.SimGpu]) -> None:
        self.gpus = gpus
        self.path = "/run/plateau-sim/gpu-state.json"


def _json(obj: object) -> str:
    import json

    return json.dumps(obj)


def h200_events(name: str) -> tuple[GpuHeader, list[GpuSample]]:
    """A recorded real-H200 agent run (tests/data/gpu/h200_x1/NAME.jsonl)."""
    events = parse_lines((H200_DIR / f"{name}.jsonl").read_text().splitlines())
    header = events[0]
    assert isinstance(header, GpuHeader)
    return header, [e for e in events if isinstance(e, GpuSample)]


@pytest.fixture
def fake_pynvml_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Environment in which `import pynvml` finds the fake (NVML can't run on this CPU box)."""
    import os

    env = dict(os.environ)
    env["PYTHONPATH"] = str(FAKE_PYNVML_DIR)
    env.pop("FAKE_NVML_FAIL_INIT", None)
    return env


def plateau_dark_theme() -> Theme:
    """The project's default theme, so snapshots show the real $gpu-load-* colours."""
    from console.app.theming import parse_theme_file

    return parse_theme_file(THEME_FILE)
