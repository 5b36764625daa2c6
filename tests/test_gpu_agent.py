"""The agent itself: Python 3.8 syntax, size, smi CSV parsing against recorded real output,
the NVML backend against a fake pynvml (the one allowed mock), the sim backend's physics, and
the no-driver error."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from console.gpu import agent
from console.gpu.collector import AGENT_PATH, agent_source, parse_lines
from console.gpu.models import AgentError, GpuHeader, GpuSample
from tests.support.gpu_fixtures import H200_DIR


def run_agent(*args: str, env: dict[str, str] | None = None,
              timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", agent_source(), *args],
        capture_output=True, text=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL,
    )


def test_agent_is_python38_syntax_and_small() -> None:
    source = AGENT_PATH.read_text()
    ast.parse(source, feature_version=(3, 8))  # raises on match, X | Y at runtime, etc.
    assert len(source.encode()) < 100_000  # travels as one argv string (Linux: 128 KiB max)
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    assert imported <= set(sys.stdlib_module_names) | {"pynvml"}


def test_smi_fields_match_the_recorded_h200_query() -> None:
    recorded = (H200_DIR / "smi_fields.txt").read_text().strip().split(",")
    assert recorded == agent.SMI_FIELDS
    # The header row shows canonical aliases (clocks.sm -> clocks.current.sm): why we parse
    # by position, never by name.
    header = (H200_DIR / "smi_query_header.csv").read_text().splitlines()[0]
    assert "clocks.current.sm [MHz]" in header
    assert len(header.split(", ")) == len(agent.SMI_FIELDS)


def test_parse_recorded_smi_csv_row() -> None:
    row = (H200_DIR / "smi_query_idle.csv").read_text().splitlines()[0]
    r = agent.parse_smi_row(row)
    assert r is not None
    assert r["name"] == "NVIDIA H200"
    assert r["mem_total_mib"] == 143771
    assert r["power_limit_w"] == 700.0
    assert r["sm_clock_max_mhz"] == 1980 and r["mem_clock_max_mhz"] == 3201
    assert r["clock_reasons_mask"] == 1 and r["clock_reasons"] == ["idle"]
    assert r["fan_pct"] is None  # "[N/A]" on a passively cooled board
    assert (r["pcie_gen"], r["pcie_width"], r["pcie_width_max"]) == (5, 16, 16)
    assert r["driver_version"] == "580.159.04"


def test_parse_smi_row_na_and_not_supported_and_commas() -> None:
    cells = ["3", "NVIDIA RTX PRO 6000, Server", "GPU-x", "00000000:3B:00.0", "[N/A]",
             "[Not Supported]", "1024", "97887", "[N/A]", "600.00", "45", "N/A", "2100",
             "2617", "14001", "14001", "0x0000000000000004", "5", "5", "8", "16",
             "[Not Supported]", "0", "[N/A]", "P1", "580.95.05"]
    r = agent.parse_smi_row(", ".join(cells))
    assert r is not None
    assert r["index"] == 3 and r["name"] == "NVIDIA RTX PRO 6000, Server"
    assert r["util_gpu"] is None and r["util_mem"] is None and r["power_w"] is None
    assert r["mem_temp_c"] is None and r["ecc_uncorrected"] is None
    assert r["clock_reasons"] == ["sw power cap"]
    assert r["pcie_width"] == 8 and r["pcie_width_max"] == 16
    assert agent.parse_smi_row("garbage") is None
    assert agent.parse_smi_row(",".join(["x"] * len(agent.SMI_FIELDS))) is None


def test_parse_smi_compute_apps() -> None:
    text = "GPU-a, 4242, /usr/bin/python3, 81234\nGPU-a, 4243, [N/A], [N/A]\nbad line\n"
    apps = agent.parse_smi_apps(text)
    assert apps["GPU-a"][0] == {"pid": 4242, "used_mib": 81234.0, "name": "python3"}
    assert apps["GPU-a"][1]["used_mib"] is None


def test_decode_clock_reasons() -> None:
    assert agent.decode_reasons(0x4 | 0x40) == ["sw power cap", "hw thermal"]
    assert agent.decode_reasons(0) == []
    assert agent.decode_reasons(None) is None


def test_nvml_backend_with_fake_pynvml(fake_pynvml_env: dict[str, str]) -> None:
    proc = run_agent("--backend", "nvml", "--count", "3", "--interval", "0.25",
                     "--pcie", "thread", "--pcie-period", "0.25", env=fake_pynvml_env)
    assert proc.returncode == 0, proc.stderr
    events = parse_lines(proc.stdout.splitlines())
    header = events[0]
    assert isinstance(header, GpuHeader)
    assert header.backend == "nvml" and header.nvml_version == "13.580.159.04"  # bytes decoded
    # P2P READ used the literal 0: the fake raises on the (0,) tuple, like ctypes does.
    assert header.topology.p2p["read"] == [["X", "OK"], ["OK", "X"]]
    assert header.topology.links == [["X", "NODE"], ["NODE", "X"]]
    assert header.nvlink is None  # NVLink NotSupported -> absent, not an error
    samples = [e for e in events if isinstance(e, GpuSample)]
    assert len(samples) == 3
    g0, g1 = samples[-1].gpus
    assert g0.power_w == pytest.approx(685.123) and g0.power_limit_w == 700
    assert g0.mem_used_mib == 40000 and g0.mem_total_mib == 143771  # v2 memory info
    assert g0.throttled == ["sw power cap"] and g1.clock_reasons == ["idle"]
    assert g0.fan_pct is None  # NotSupported -> None
    assert g0.gpm is not None and g0.gpm.tensor_util == 89.5
    assert g1.gpm is None  # GPU 1 does not support GPM
    assert g0.pcie_tx_bytes_s == 2048 * 1024  # from the background PCIe thread
    assert g0.processes is not None and g0.processes[1].used_mib is None


def test_nvml_nvlink_pairs_become_nv_links(fake_pynvml_env: dict[str, str]) -> None:
    env = {**fake_pynvml_env, "FAKE_NVML_NVLINK": "1"}
    proc = run_agent("--backend", "nvml", "--count", "2", "--interval", "0.25", env=env)
    events = parse_lines(proc.stdout.splitlines())
    header = events[0]
    assert isinstance(header, GpuHeader)
    assert header.topology.links == [["X", "NV4"], ["NV4", "X"]]
    assert header.nvlink is not None and len(header.nvlink[0].links) == 4
    last = events[-1]
    assert isinstance(last, GpuSample) and last.gpus[0].nvlink_tx_bytes_s is not None


def test_pcie_inline_costs_show_in_cost_ms(fake_pynvml_env: dict[str, str]) -> None:
    def costs(mode: str) -> float:
        proc = run_agent("--backend", "nvml", "--count", "4", "--interval", "0.25",
                         "--pcie", mode, env=fake_pynvml_env)
        samples = [e for e in parse_lines(proc.stdout.splitlines()) if isinstance(e, GpuSample)]
        return min(s.cost_ms or 0 for s in samples)

    # The fake's throughput call sleeps 2 ms; 2 GPUs x (TX + RX) inline = 8 ms per sample.
    assert costs("inline") >= 7.0 > costs("off")


def test_no_driver_gives_one_clear_error_line(fake_pynvml_env: dict[str, str]) -> None:
    env = {**fake_pynvml_env, "FAKE_NVML_FAIL_INIT": "Driver Not Loaded", "PATH": "/nonexistent"}
    proc = run_agent("--backend", "auto", env=env)
    assert proc.returncode == agent.EXIT_NO_DRIVER
    lines = proc.stdout.splitlines()
    assert len(lines) == 1
    event = parse_lines(lines)[0]
    assert isinstance(event, AgentError) and event.code == "no_driver"
    assert "Driver Not Loaded" in event.message and "nvidia-smi not found" in event.message


def write_state(path: Path, **over: object) -> None:
    state = {"version": 1, "pid": os.getpid(), "updated": time.time(), "phase": "ready",
             "gpu_name": "NVIDIA RTX PRO 6000 Blackwell Server Edition", "num_gpus": 2,
             "memory_total_mib": 97887,
             "gpus": [{"index": i, "in_use": True, "memory_used_mib": 80000.0,
                       "activity": 1.0 if i == 0 else 0.3, "tensor_activity": 0.9,
                       "pcie_tx_bytes_per_s": 2e9, "pcie_rx_bytes_per_s": 1e9}
                      for i in range(2)],
             "tokens_per_s": 5321.0, "running": 64, "queued": 0}
    state.update(over)
    path.write_text(json.dumps(state))


def test_sim_backend_follows_state_file(tmp_path: Path) -> None:
    state = tmp_path / "gpu-state.json"
    write_state(state)
    proc = run_agent("--backend", "sim", "--sim-state", str(state), "--count", "2",
                     "--interval", "0.25")
    events = parse_lines(proc.stdout.splitlines())
    header, sample = events[0], events[-1]
    assert isinstance(header, GpuHeader) and len(header.gpus) == 2
    assert header.nvlink is None and header.topology.links[0][1] == "NODE"
    assert isinstance(sample, GpuSample) and sample.sim is not None
    assert sample.sim.tokens_per_s == 5321.0 and sample.sim_state == "live"
    g0, g1 = sample.gpus
    assert g0.throttled == ["sw power cap"] and g0.power_w is not None and g0.power_w <= 600
    assert g0.sm_clock_mhz is not None and g0.sm_clock_mhz < 2617  # capped clocks
    assert g1.throttled == [] and g1.power_w is not None and g1.power_w < g0.power_w
    assert g0.pcie_tx_bytes_s == 2e9 and g0.mem_used_mib == 80000
    assert g0.processes and g0.processes[0].pid == os.getpid()


@pytest.mark.parametrize("stale", [{"updated": 0.0}, {"pid": 2**22 + 12345},
                                   {"phase": "stopped"}, {"version": 9}])
def test_sim_backend_stale_or_dead_state_is_idle(tmp_path: Path, stale: dict[str, Any]) -> None:
    state = tmp_path / "gpu-state.json"
    write_state(state, **stale)
    proc = run_agent("--backend", "sim", "--sim-state", str(state), "--count", "1",
                     "--sim-gpus", "3")
    events = parse_lines(proc.stdout.splitlines())
    sample = events[-1]
    assert isinstance(sample, GpuSample) and sample.sim_state == "idle"
    assert len(sample.gpus) == 3
    assert all(g.util_gpu == 0 and g.clock_reasons == ["idle"] for g in sample.gpus)


def test_sim_is_deterministic_and_has_thermal_inertia() -> None:
    import random

    def temps(seed: int) -> list[float]:
        gpu = agent.SimGpu(0, "x", 97887.0, random.Random(seed))
        load = {"activity": 1.0, "tensor_activity": 1.0, "in_use": True}
        return [gpu.read(load, 1.0, [])["temp_c"] for _ in range(60)]

    a, b = temps(3), temps(3)
    assert a == b
    assert a[0] < a[10] < a[59]  # warms gradually, not in one step
    assert a[1] - a[0] < 5

