"""Startup logs, graceful SIGTERM drain, failure modes and the GPU state file."""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from typing import Any

import httpx

from console.sim.gpu_state import GpuLoad, compute_state
from tests.support.sim_fixtures import SimFactory

STARTUP_ORDER = [
    "server_args={'model_path': 'test-model'",
    "Load weight begin. avail mem=",
    "Load weight end. elapsed=",
    "KV Cache is allocated. dtype: torch.bfloat16, #tokens: ",
    "Memory pool end. avail mem=",
    "Capture target prefill CUDA graph begin.",
    "Capture target decode CUDA graph end. bs=[1, 2, 4, 8,",
    "max_total_num_tokens=",
    "Engine startup timings (s): load_weight=",
    "INFO:     Started server process [",
    "INFO:     Uvicorn running on http://127.0.0.1:",
    '"GET /model_info HTTP/1.1" 200 OK',
    '"POST /generate HTTP/1.1" 200 OK',
    "The server is fired up and ready to roll!",
]
LINE = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?: TP\d+)?(?: EP\d+)?\] ")


def test_startup_log_order_and_rank_prefix(sim_factory: SimFactory) -> None:
    sim = sim_factory("--tp", "2")
    log = sim.log_text()
    positions = [log.find(marker) for marker in STARTUP_ORDER]
    assert all(p >= 0 for p in positions), list(zip(STARTUP_ORDER, positions, strict=True))
    assert positions == sorted(positions)
    assert "] Load weight begin" in log and " TP1] Load weight begin" in log
    assert " TP0] max_total_num_tokens=" in log
    assert " TP0] Prefill batch, #new-seq: 1, #new-token: 6, #cached-token: 0" in log
    # Every line is a logged record but tqdm's capture bar (0.5.23 decode_cuda_graph_runner.py:
    # `Capturing batches (...)` frames joined by carriage returns on TP0's stderr).
    # (read in text mode, each frame is a line of its own and the leading "\r" an empty one).
    for line in log.splitlines():
        assert LINE.match(line) or line.startswith("Capturing batches (bs=") or not line, line
    assert "Capturing batches (bs=" in log and "100%|" in log
    state = json.loads(sim.state_file.read_text())
    assert state["phase"] == "ready" and state["pid"] == sim.pid
    used = [g for g in state["gpus"] if g["in_use"]]
    assert [g["index"] for g in used] == [0, 1]
    assert all(g["memory_used_mib"] > 40_000 for g in used)
    assert all(g["memory_used_mib"] == 0 for g in state["gpus"] if not g["in_use"])


def test_sigterm_drains_in_flight_requests(sim_factory: SimFactory) -> None:
    sim = sim_factory("--sim-speed", "4")
    result: dict[str, Any] = {}

    def long_request() -> None:
        # Long enough to still be decoding when the SIGTERM lands on a loaded machine.
        body = {"input_ids": [5] * 16, "sampling_params": {"max_new_tokens": 300,
                "ignore_eos": True}}
        result["resp"] = httpx.post(f"{sim.base_url}/generate", json=body, timeout=30).json()

    worker = threading.Thread(target=long_request)
    worker.start()
    # Wait for the request to be in flight, however slow the machine (no fixed budget: a
    # SIGTERM before it arrives tests nothing and used to fail under load).
    deadline = time.monotonic() + 120
    while "Prefill batch, #new-seq: 1, #new-token: 16" not in sim.log_text():
        assert time.monotonic() < deadline, "the request never reached the simulator"
        threading.Event().wait(0.05)
    code = sim.stop(timeout=30)
    worker.join(10)
    assert code == 0
    assert result["resp"]["meta_info"]["completion_tokens"] == 300  # drained, not cut
    log = sim.log_text()
    assert "SIGTERM received. signum=None frame=None. Draining requests and shutting down..." in log
    assert "Gracefully exiting... Remaining number of requests 1. Remaining requests " in log
    assert log.index("Gracefully exiting") < log.index("INFO:     Shutting down")
    assert "INFO:     Finished server process [" in log
    state = json.loads(sim.state_file.read_text())
    assert state["phase"] == "stopped"
    assert all(g["memory_used_mib"] == 0 and not g["in_use"] for g in state["gpus"])


def test_oom_at_startup_when_weights_do_not_fit(sim_factory: SimFactory) -> None:
    sim = sim_factory("--sim-weights-gb", "300", ready=False)
    code = sim.wait_exit(20)
    assert code == -9  # SGLang kills its own process tree
    log = sim.log_text()
    assert "torch.OutOfMemoryError: CUDA out of memory." in log
    assert "Rank 0 scheduler died during initialization (exit code: 1)" in log
    assert "fired up" not in log
    assert json.loads(sim.state_file.read_text())["phase"] == "stopped"


def test_not_enough_memory_for_kv_cache(sim_factory: SimFactory) -> None:
    sim = sim_factory("--mem-fraction-static", "0.3", ready=False)
    assert sim.wait_exit(20) == -9
    assert ("Not enough memory. Please try to increase --mem-fraction-static. Current value: "
            "mem_fraction_static=0.3") in sim.log_text()


def test_nan_crash_for_flag_combination(sim_factory: SimFactory) -> None:
    sim = sim_factory("--attention-backend", "triton", "--kv-cache-dtype", "fp8_e4m3",
                      "--sim-nan-when", "attention-backend=triton,kv-cache-dtype=fp8_e4m3",
                      "--sim-nan-after-steps", "20")
    body = {"input_ids": [5] * 8, "sampling_params": {"max_new_tokens": 50, "ignore_eos": True}}
    with contextlib.suppress(httpx.HTTPError):  # the connection dies with the server
        httpx.post(f"{sim.base_url}/generate", json=body, timeout=10)
    assert sim.wait_exit(20) == -9
    log = sim.log_text()
    assert "Scheduler hit an exception: Traceback (most recent call last):" in log
    assert "NaN in the logits" in log
    assert "SIGQUIT received. signum=None, frame=None. It usually means one child failed." in log


def test_nan_flag_combination_not_matching_runs_fine(sim_factory: SimFactory) -> None:
    sim = sim_factory("--sim-nan-when", "attention-backend=triton", "--sim-nan-after-steps", "2")
    body = {"input_ids": [5] * 8, "sampling_params": {"max_new_tokens": 10, "ignore_eos": True}}
    resp = httpx.post(f"{sim.base_url}/generate", json=body, timeout=10)
    assert resp.json()["meta_info"]["completion_tokens"] == 10


def test_compute_state_is_pure_and_complete() -> None:
    load = GpuLoad(phase="ready", gpus_in_use=2, base_gpu_id=1, memory_used_mib=80_000,
                   activity=1.4, tensor_activity=0.5, pcie_bytes_per_s=1e9, tokens_per_s=800,
                   running=3, queued=1)
    state = compute_state(load, gpu_name="G", num_gpus=4, memory_total_mib=97887, pid=1, now=5.0)
    assert state == compute_state(load, gpu_name="G", num_gpus=4, memory_total_mib=97887, pid=1,
                                  now=5.0)
    assert state["version"] == 1 and state["updated"] == 5.0
    assert [g["in_use"] for g in state["gpus"]] == [False, True, True, False]
    assert state["gpus"][1]["activity"] == 1.0  # clamped
    assert state["gpus"][1]["pcie_tx_bytes_per_s"] == 1e9
    stopped = compute_state(GpuLoad(phase="stopped", gpus_in_use=2, memory_used_mib=5),
                            gpu_name="G", num_gpus=2, memory_total_mib=1, pid=1)
    assert all(not g["in_use"] and g["memory_used_mib"] == 0 for g in stopped["gpus"])
