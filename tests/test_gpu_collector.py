"""Collector: parsing agent lines from all three backends (recorded real H200 NVML and smi
runs, the sim agent), N/A and garbage handling, topology text, and streaming the agent
through the real transports (LocalTransport and a real sshd on loopback)."""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import time
from pathlib import Path

import pytest

from console.commands import gpus as gpus_cmd
from console.gpu.collector import (
    AgentOptions,
    GpuAgentError,
    GpuCollector,
    agent_argv,
    build_topology,
    parse_line,
    parse_lines,
    read_once,
)
from console.gpu.models import AgentError, AgentWarning, GpuHeader, GpuSample
from console.gpu.topology import parse_matrix
from console.host.local import LocalTransport
from console.host.ssh import SshTransport
from tests.support.gpu_fixtures import H200_DIR, h200_events

TOPO_8X_H100 = (
    "\t\x1b[4mGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\tGPU6\tGPU7\tNIC0\tCPU Affinity\t"
    "NUMA Affinity\tGPU NUMA ID\x1b[0m\n"
    + "".join(
        f"GPU{i}\t" + "\t".join(" X " if i == j else "NV18" for j in range(8))
        + f"\tPXB\t{'0-47,96-143' if i < 4 else '48-95,144-191'}\t{0 if i < 4 else 1}\t\tN/A\n"
        for i in range(8)
    )
    + "NIC0\t" + "\t".join("PXB" for _ in range(8)) + "\t X \n\nLegend:\n\n  X    = Self\n"
    "\nNIC Legend:\n\n  NIC0: mlx5_0\n"
)


def test_recorded_h200_nvml_run_parses() -> None:
    header, samples = h200_events("nvml_load_gpm")
    assert header.backend == "nvml" and header.driver_version == "580.159.04"
    assert header.gpus[0].memory_total_mib == 143771 and header.gpus[0].power_limit_w == 700
    assert header.gpus[0].sm_clock_max_mhz == 1980 and header.gpus[0].gpm_supported
    assert header.nvlink is None  # single H200 VM: NVLink NotSupported
    assert header.topology.cpu_affinity == ["0-15"] and header.topology.numa_affinity == ["0"]
    last = samples[-1].gpus[0]
    assert last.throttled == ["sw power cap"]  # 690 W of 700 W under bf16 GEMM
    assert last.gpm is not None and last.gpm.tensor_util is not None
    assert last.gpm.tensor_util > 50
    assert last.pcie_rx_bytes_s is not None and last.pcie_rx_bytes_s > 1e9  # H2D copies
    assert last.fan_pct is None


def test_recorded_h200_smi_run_parses() -> None:
    header, samples = h200_events("smi_load")
    assert header.backend == "smi" and header.topology.source == "smi"
    assert header.topology.gpus == ["GPU0"] and header.topology.links == [["X"]]
    assert header.topology.p2p["read"] == [["X"]]
    g = samples[-1].gpus[0]
    assert g.power_limit_w == 700 and g.pcie_tx_bytes_s is None and g.gpm is None


def test_recorded_pcie_costs_inline_vs_off() -> None:
    """The regression record of the real cost: the blocking PCIe call on the fast path."""
    def steady(name: str) -> float:
        _, samples = h200_events(name)
        costs = sorted(s.cost_ms or 0.0 for s in samples[2:])
        return costs[len(costs) // 2]

    assert steady("nvml_idle_inline") > 30 > 5 > steady("nvml_idle_off")
    assert steady("nvml_idle_thread") < 5  # the background thread keeps it off the path


def test_recorded_plateau_gpus_json_from_device() -> None:
    lines = (H200_DIR / "plateau_gpus_json.jsonl").read_text().splitlines()
    wrapped = [json.loads(line) for line in lines]
    assert [w["type"] for w in wrapped] == ["header", "sample", "sample", "sample", "sample"]
    sample = GpuSample.model_validate(wrapped[-1]["data"])
    assert sample.gpus[0].name == "NVIDIA H200"


def test_garbage_partial_and_unknown_lines_are_dropped() -> None:
    good = json.dumps({"type": "sample", "seq": 1, "gpus": [{"index": 0, "util_gpu": 5}]})
    lines = [
        "", "Traceback (most recent call last):", good[: len(good) // 2], "[1, 2]",
        '{"type": "nonsense"}', "\x1b[31m{not json", good,
        json.dumps({"type": "warn", "message": "GPM failed\x1b[2J"}),
        json.dumps({"type": "sample", "gpus": [{"util_gpu": 5}, "x", {"index": 1}]}),
    ]
    events = parse_lines(lines)
    assert len(events) == 3
    assert isinstance(events[0], GpuSample) and events[0].gpus[0].util_gpu == 5
    assert isinstance(events[1], AgentWarning) and "\x1b" not in events[1].message
    assert isinstance(events[2], GpuSample) and [g.index for g in events[2].gpus] == [1]


def test_na_spellings_and_bad_types_become_none() -> None:
    line = json.dumps({"type": "sample", "gpus": [{
        "index": "0", "util_gpu": "[N/A]", "mem_used_mib": "[Not Supported]", "power_w": "N/A",
        "temp_c": "hot", "fan_pct": None, "pcie_gen": "5", "clock_reasons": "oops",
        "processes": [{"pid": "12", "used_mib": "[N/A]"}, {"nope": 1}], "gpm": 7,
        "sm_clock_mhz": float("nan") if False else "NaN",
    }]})
    event = parse_line(line)
    assert isinstance(event, GpuSample)
    g = event.gpus[0]
    assert (g.util_gpu, g.mem_used_mib, g.power_w, g.temp_c, g.fan_pct) == (None,) * 5
    assert g.sm_clock_mhz is None and g.pcie_gen == 5 and g.clock_reasons is None
    assert g.processes is not None and len(g.processes) == 1 and g.processes[0].pid == 12
    assert g.gpm is None and g.mem_pct is None and g.power_pct is None


def test_error_line_parses() -> None:
    event = parse_line('{"type":"error","code":"no_driver","message":"no NVIDIA driver"}')
    assert isinstance(event, AgentError) and event.code == "no_driver"


def test_topology_text_with_ansi_nvlink_and_nics() -> None:
    m = parse_matrix(TOPO_8X_H100)
    assert m.gpus == [f"GPU{i}" for i in range(8)]
    assert m.cells[0][0] == "X" and m.cells[0][7] == "NV18" and len(m.cells[0]) == 8
    assert m.cpu_affinity[0] == "0-47,96-143" and m.numa_affinity[7] == "1"


def test_recorded_topology_raw_bytes() -> None:
    raw = (H200_DIR / "topo_m.raw").read_text()
    assert "\x1b[4m" in raw  # the escapes really are there when piped
    m = parse_matrix(raw)
    assert m.gpus == ["GPU0"] and m.cells == [["X"]] and m.cpu_affinity == ["0-15"]
    p2p = parse_matrix((H200_DIR / "topo_p2p_r.raw").read_text())
    assert p2p.cells == [["X"]]


def test_build_topology_from_smi_text_only() -> None:
    topo = build_topology({"source": "smi", "smi": {"topo_m": TOPO_8X_H100, "p2p_read": None}})
    assert topo.source == "smi" and len(topo.links) == 8 and topo.links[3][4] == "NV18"
    assert topo.topo_m_text is not None and "\x1b" not in topo.topo_m_text


def test_agent_argv_carries_program_path_and_options() -> None:
    argv = agent_argv(AgentOptions(backend="sim", interval=0.1, count=2, python="/opt/py3",
                                   sim_gpus=4, pcie="off"), "/run/x/bin/agent-1234.py")
    assert argv[:2] == ["/opt/py3", "/run/x/bin/agent-1234.py"]
    rest = argv[2:]
    assert rest[rest.index("--interval") + 1] == "0.25"  # clamped to the minimum
    assert rest[rest.index("--sim-gpus") + 1] == "4" and "--count" in rest


def _state(path: Path) -> Path:
    path.write_text(json.dumps({
        "version": 1, "pid": os.getpid(), "updated": time.time() + 60, "phase": "ready",
        "gpu_name": "NVIDIA RTX PRO 6000 Blackwell Server Edition", "num_gpus": 4,
        "memory_total_mib": 97887,
        "gpus": [{"index": i, "in_use": True, "memory_used_mib": 70000.0, "activity": 0.7,
                  "tensor_activity": 0.5, "pcie_tx_bytes_per_s": 1e9,
                  "pcie_rx_bytes_per_s": 5e8} for i in range(4)],
        "tokens_per_s": 1000.0, "running": 8, "queued": 0,
    }))
    return path


@pytest.mark.sshd
async def test_agent_streams_over_real_sshd(ssh_transport: SshTransport, tmp_path: Path) -> None:
    state = _state(tmp_path / "gpu-state.json")
    options = AgentOptions(backend="sim", interval=0.25, python=sys.executable,
                           sim_state=str(state))
    got: list[GpuHeader | GpuSample] = []
    async with GpuCollector(ssh_transport, options) as collector:
        async for event in collector:
            got.append(event)
            if len(got) == 4:
                break
    assert isinstance(got[0], GpuHeader) and got[0].backend == "sim"
    samples = [e for e in got if isinstance(e, GpuSample)]
    assert len(samples) == 3 and len(samples[0].gpus) == 4
    assert samples[-1].sim_state == "live" and samples[-1].gpus[0].mem_used_mib == 70000
    assert collector.garbage_lines == 0


async def test_read_once_and_closing_stops_the_agent(
    local_transport: LocalTransport, tmp_path: Path
) -> None:
    options = AgentOptions(backend="sim", python=sys.executable, sim_gpus=2,
                           sim_state=str(tmp_path / "missing.json"))
    header, sample = await read_once(local_transport, options)
    assert len(header.gpus) == 2 and sample.sim_state == "idle"
    # An endless stream: closing the collector must end it promptly.
    collector = GpuCollector(local_transport, AgentOptions(backend="sim", python=sys.executable,
                                                           interval=0.25))
    async for event in collector:
        if isinstance(event, GpuSample):
            break
    started = time.monotonic()
    await collector.close()
    assert time.monotonic() - started < 5


async def test_agent_error_raises_plateau_error(local_transport: LocalTransport) -> None:
    options = AgentOptions(backend="nvml", python=sys.executable)  # no NVML on this machine
    with pytest.raises(GpuAgentError) as info:
        async with GpuCollector(local_transport, options) as collector:
            async for _ in collector:
                pass
    assert "local-test" in str(info.value) and info.value.code == "no_nvml"


async def test_missing_python_is_a_clear_error(local_transport: LocalTransport) -> None:
    options = AgentOptions(backend="sim", python="/nonexistent/python3")
    from console.errors import PlateauError

    # LocalTransport refuses to spawn it; over SSH the shell exits 127: both one clear line.
    with pytest.raises(PlateauError, match="python3"):
        async with GpuCollector(local_transport, options) as collector:
            async for _ in collector:
                pass


def _ns(**kw: object) -> argparse.Namespace:
    base: dict[str, object] = dict(host=None, demo=True, local=False, once=True, count=0,
                                   json=False, interval=0.25, backend=None, no_pcie=False,
                                   sim_gpus=3, sim_state=None, config=None)
    base.update(kw)
    return argparse.Namespace(**base)


async def test_plateau_gpus_demo_table_and_json(tmp_path: Path) -> None:
    out = io.StringIO()
    assert await gpus_cmd.run(_ns(sim_state=str(tmp_path / "none.json")), out) == 0
    text = out.getvalue()
    assert "backend sim" in text and "RTX PRO 6000 BW SE" in text
    assert len([ln for ln in text.splitlines() if "RTX PRO" in ln]) == 3
    out = io.StringIO()
    await gpus_cmd.run(_ns(json=True, once=False, count=2), out)
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [r["type"] for r in rows] == ["header", "sample", "sample"]
    assert len(rows[1]["data"]["gpus"]) == 3


def test_plateau_gpus_host_and_demo_conflict() -> None:
    from console.errors import UsageError

    with pytest.raises(UsageError):
        gpus_cmd._resolve(_ns(host="box"))
