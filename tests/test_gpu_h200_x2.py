"""Two real H200s behind NVSwitch (tests/data/gpu/h200_x2, recorded on the device machine):
topology NV18 from NVML's own means and its cross-check with nvidia-smi, NVLink rates beside
the workload's own count, the agent's cost, NVLink generation naming; and the same NVSwitch
shapes through the fake pynvml (remote type SWITCH, the all-links scope, fallbacks)."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from console.gpu import agent
from console.gpu.collector import agent_source, parse_lines
from console.gpu.format import nvlink_generation, nvlink_summary, table
from console.gpu.models import AgentWarning, GpuEvent, GpuHeader, GpuSample
from console.gpu.topology import parse_matrix
from tests.support.gpu_fixtures import GPU_DATA

X2 = GPU_DATA / "h200_x2"


def events(name: str) -> tuple[GpuHeader, list[GpuSample]]:
    parsed = parse_lines((X2 / f"{name}.jsonl").read_text().splitlines())
    header = parsed[0]
    assert isinstance(header, GpuHeader)
    return header, [e for e in parsed if isinstance(e, GpuSample)]


def run_agent(env: dict[str, str], *args: str) -> list[GpuEvent]:
    proc = subprocess.run(
        [sys.executable, "-c", agent_source(), "--backend", "nvml", "--no-xid",
         "--no-smi-topo", "--interval", "0.25", *args],
        capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    return parse_lines(proc.stdout.splitlines())


def test_recorded_topology_is_nv18_and_agrees_with_nvidia_smi() -> None:
    header, _ = events("agent_load")
    topo = header.topology
    assert topo.source == "nvml" and topo.links == [["X", "NV18"], ["NV18", "X"]]
    assert topo.smi_checked and topo.disagreements == []
    smi = parse_matrix((X2 / "topo_m.txt").read_text())  # what nvidia-smi printed there
    assert smi.cells == topo.links
    assert header.nvlink is not None
    links = header.nvlink[0].links
    assert len(links) == 18 and {link.remote_type for link in links} == {"switch"}
    assert {link.remote_bus_id for link in links} == {agent.SWITCH_BUS_ID}


def test_old_agent_phb_is_overruled_by_nvidia_smi_and_said() -> None:
    header, _ = events("agent_idle_before")  # the agent before the fix: PHB behind NVSwitch
    assert header.topology.links == [["X", "NV18"], ["NV18", "X"]]
    assert header.topology.disagreements == [
        "GPU0-GPU1: NVML PHB, nvidia-smi NV18", "GPU1-GPU0: NVML PHB, nvidia-smi NV18"]


def test_smi_backend_reads_nv18_from_topo_text() -> None:
    header, samples = events("agent_smi_load")
    assert header.topology.source == "smi"
    assert header.topology.links == [["X", "NV18"], ["NV18", "X"]]
    assert len(samples[-1].gpus) == 2


def test_nvlink_rates_match_the_workload_and_nvidia_smi_counters() -> None:
    _, samples = events("agent_load")
    steady = samples[2:]
    counts = [json.loads(line) for line in (X2 / "load.out").read_text().replace("}{", "}\n{")
              .splitlines() if line.startswith("{")]
    for gpu in (0, 1):
        tx = statistics.median(s.gpus[gpu].nvlink_tx_bytes_s or 0 for s in steady)
        workload = counts[gpu]["allreduce_tx_bytes_s"]
        assert tx == pytest.approx(workload, rel=0.06)  # NCCL's payload vs the link's data
        rx = statistics.median(s.gpus[gpu].nvlink_rx_bytes_s or 0 for s in steady)
        assert rx == pytest.approx(workload, rel=0.06)
    # nvidia-smi nvlink -gt d, before/after the window: the same order of magnitude per link.
    before, after = (X2 / "nvlink_gt_a.txt").read_text(), (X2 / "nvlink_gt_b.txt").read_text()
    assert "Link 17: Data Tx" in before and "Link 17: Data Tx" in after


def test_recorded_agent_cost_per_sample_is_under_budget() -> None:
    _, samples = events("agent_load")
    cpu = statistics.median(s.agent_cpu_ms for s in samples[2:] if s.agent_cpu_ms is not None)
    assert cpu < 5.0  # issue 18: < 5 ms per sample for 2 GPUs with NVLink rates on
    bench = [json.loads(line) for line in (X2 / "bench_load.jsonl").read_text().splitlines()]
    by_what = {b["what"]: b for b in bench}
    now = by_what["agent process (this tree, default)"]["agent_cpu_ms_median"]
    before = by_what["agent sample (agent_before.py)"]["cpu_ms_median"]
    assert now < 5.0 and before / now > 5


def test_nvlink_generation_names_the_version() -> None:
    assert nvlink_generation(6) == "NVLink 4"  # NVML_NVLINK_VERSION_4_0: what H200 reports
    assert nvlink_generation(7) == "NVLink 5"
    assert nvlink_generation(3) == "NVLink 2.2"
    assert nvlink_generation(42) == "NVLink (version code 42)"
    assert nvlink_generation(None) == "N/A"
    header, _ = events("agent_load")
    assert nvlink_summary(header) == "NVLink 4 · 18 links/GPU"


def test_gpus_table_has_the_nvlink_column() -> None:
    _, samples = events("agent_load")
    text = table(samples[-1], nvlink=True)
    assert "NVLINK RX/TX" in text.splitlines()[0]
    assert "↓2.0G ↑2.0G" in text or "↓2.1G ↑2.1G" in text
    assert "NVLINK" not in table(samples[0], nvlink=None)  # first sample: no rates yet
    recorded = (X2 / "plateau_gpus_once.txt").read_text()
    assert "NVLINK RX/TX" in recorded and "NVLink 4 · 18 links/GPU" in recorded


def test_processes_carry_user_and_command() -> None:
    header, samples = events("agent_load")
    processes = samples[-1].gpus[0].processes
    assert processes is not None
    proc = processes[0]
    assert proc.user == "root" and proc.uid == header.host.uid == 0
    assert proc.cmd is not None and proc.cmd.startswith("/opt/torch/.venv/bin/python3")


# -- the same shapes through the fake pynvml ------------------------------------------------


def test_fake_nvswitch_gives_nv18_and_gpm_nvlink(fake_pynvml_env: dict[str, str]) -> None:
    env = {**fake_pynvml_env, "FAKE_NVML_NVLINK": "switch"}
    got = run_agent(env, "--count", "3")
    header = got[0]
    assert isinstance(header, GpuHeader)
    assert header.topology.links == [["X", "NV18"], ["NV18", "X"]]
    # GPU 0 supports GPM (NVLink from its metrics), GPU 1 does not (the all-links field).
    assert header.nvlink_mode == "all-links+gpm"
    last = got[-1]
    assert isinstance(last, GpuSample)
    assert last.gpus[0].nvlink_tx_bytes_s == 43000.0 * 1048576
    # GPU 1's links: TX KiB/ms = 2 * (1 + link % 3) * 1 per link, all 18 summed = 72 MiB/s.
    assert last.gpus[1].nvlink_tx_bytes_s == pytest.approx(72 * 1024 * 1000, rel=0.05)


def test_older_driver_without_remote_type_uses_the_switch_bus_id(
    fake_pynvml_env: dict[str, str],
) -> None:
    env = {**fake_pynvml_env, "FAKE_NVML_NVLINK": "switch", "FAKE_NVML_NO_REMOTE_TYPE": "1"}
    header = run_agent(env, "--count", "1")[0]
    assert isinstance(header, GpuHeader)
    assert header.topology.links == [["X", "NV18"], ["NV18", "X"]]
    assert header.nvlink is not None and header.nvlink[0].links[0].remote_type is None


def test_all_links_scope_refused_falls_back_per_link(fake_pynvml_env: dict[str, str]) -> None:
    env = {**fake_pynvml_env, "FAKE_NVML_NVLINK": "switch", "FAKE_NVML_NO_ALL_LINKS": "1"}
    got = run_agent(env, "--count", "4", "--nvlink", "fields")
    warnings = [e for e in got if isinstance(e, AgentWarning)]
    assert any("per link" in w.message for w in warnings)
    last = got[-1]
    assert isinstance(last, GpuSample)
    # GPU 0: 2 * (1 + link % 3) * 2 KiB/ms per link, summed over 18 links = 144 MiB/s.
    assert last.gpus[0].nvlink_tx_bytes_s == pytest.approx(144 * 1024 * 1000, rel=0.05)


def test_nvlink_pairs_logic() -> None:
    by_bus = {"00000000:1B:00.0": 0, "00000000:1C:00.0": 1}
    switch = {k: (agent.SWITCH_BUS_ID, "switch") for k in range(18)}
    groups = {0: agent.group_links(0, switch, by_bus), 1: agent.group_links(1, switch, by_bus)}
    ok = [["X", "OK"], ["OK", "X"]]
    assert agent.nvlink_pairs(groups, ok) == {(0, 1): 18, (1, 0): 18}
    # Switch links up but NVLink P2P not OK (no fabric manager): not NVLink-reachable.
    assert agent.nvlink_pairs(groups, [["X", "NS"], ["NS", "X"]]) == {}
    direct = {k: ("00000000:1C:00.0", "gpu") for k in range(4)}
    assert agent.nvlink_pairs({0: agent.group_links(0, direct, by_bus)}, ok) == {(0, 1): 4}


def test_device_scripts_parse_and_take_one_smi_field_list() -> None:
    bench = Path(__file__).resolve().parent / "bench"
    for script in ("gpu_device_capture.sh", "gpu_device_capture2.sh",
                   "device_console_snapshot.sh"):
        subprocess.run(["bash", "-n", str(bench / script)], check=True)
        text = (bench / script).read_text()
        assert "gpu_load.py" in text and ".ready" in text  # every GPU, readings after ready
    # The capture's SMI_FIELDS one-liner (the old one raised TypeError: sequence item 0).
    line = next(x for x in (bench / "gpu_device_capture.sh").read_text().splitlines()
                if x.startswith("F=$(python3 -c"))
    code = line[len('F=$(python3 -c "'):-2]
    repo = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True,
                         text=True, check=True).stdout.strip()
    assert out.split(",") == agent.SMI_FIELDS


def test_recorded_console_on_the_gpu_machine_shows_nvlink_and_nv18() -> None:
    console = X2 / "console"
    dash = (console / "dash120.txt").read_text()
    assert "NVLink rx/tx" in dash and dash.count("↓2.0G ↑2.0G") == 2  # both GPU rows
    topo = (console / "topo.txt").read_text()
    assert "GPU0   X    NV18" in topo and "NVLink 4 · all to NVSwitch" in topo
