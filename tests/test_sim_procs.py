"""`--sim-ideal-procs N` (console/sim/procs.py): one port served by N processes, lateness merged
over all of them, no child outliving the parent, clear errors for invalid use."""

from __future__ import annotations

import os
import signal
import struct
import time
from pathlib import Path

import httpx
import pytest

from console.sim.args import parse
from tests.support.sim_fixtures import SimFactory, SimProcess

IDEAL = ("--sim-ideal-ttft-ms", "2", "--sim-ideal-itl-ms", "1")
BODY = {"input_ids": [9] * 10, "stream": True,
        "sampling_params": {"max_new_tokens": 3, "ignore_eos": True}}


def _children(pid: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"  # exited, not yet reaped by its new parent


def _wait_gone(pids: list[int], timeout: float = 15.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not all(_gone(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if not _gone(p)]


def _fresh(sim: SimProcess, path: str) -> httpx.Response:
    """On a new connection: the kernel picks which process answers."""
    with httpx.Client(timeout=10) as client:
        return client.get(sim.base_url + path)


def test_two_processes_serve_the_port_and_lateness_merges_both(sim_factory: SimFactory) -> None:
    sim = sim_factory(*IDEAL, "--sim-ideal-procs", "2")
    assert len(_children(sim.pid)) == 1
    _fresh(sim, "/_sim/lateness?reset=1")  # the warmup's samples, wherever it went
    streams, events = 32, 0
    for _ in range(streams):  # each on its own connection, so SO_REUSEPORT spreads them
        with httpx.Client(timeout=10) as client, \
                client.stream("POST", f"{sim.base_url}/generate", json=BODY) as resp:
            events += sum(1 for line in resp.iter_lines() if line.startswith("data: {"))
    local_first = struct.unpack("<QQ", _fresh(sim, "/_sim/lateness/local").content[:16])[0]
    merged = _fresh(sim, "/_sim/lateness?reset=1").json()
    assert set(merged) == {"first_token", "chunk"}
    assert merged["first_token"]["count"] == streams  # one first token per stream, all processes
    assert merged["chunk"]["count"] == events  # one sample per event carrying new tokens
    # One process alone saw fewer: both served (all 32 on one process: p = 2**-31).
    assert 0 < local_first < streams
    for _ in range(4):  # reset cleared every process, whichever answers
        after = _fresh(sim, "/_sim/lateness").json()
        assert after["first_token"]["count"] == 0 and after["chunk"]["count"] == 0
        assert struct.unpack("<QQ", _fresh(sim, "/_sim/lateness/local").content[:16]) == (0, 0)


def test_sigterm_stops_every_child(sim_factory: SimFactory) -> None:
    sim = sim_factory(*IDEAL, "--sim-ideal-procs", "3")
    children = _children(sim.pid)
    assert len(children) == 2
    assert sim.stop() == 0
    assert _wait_gone(children) == []
    assert "Finished server process" in sim.log_text()


def test_children_stop_when_the_parent_is_killed(sim_factory: SimFactory) -> None:
    sim = sim_factory(*IDEAL, "--sim-ideal-procs", "2")
    children = _children(sim.pid)
    os.kill(sim.pid, signal.SIGKILL)  # no handler runs: the lifeline pipe's EOF stops them
    sim.wait_exit()
    assert _wait_gone(children) == []


@pytest.mark.parametrize(("argv", "message"), [
    (["--sim-ideal-procs", "2"], "--sim-ideal-procs needs ideal-timing mode"),
    ([*IDEAL, "--sim-ideal-procs", "0"], "--sim-ideal-procs must be at least 1, got 0"),
])
def test_invalid_procs_is_a_one_line_error(argv: list[str], message: str) -> None:
    with pytest.raises(SystemExit) as exc:
        parse(["--model-path", "m", *argv])
    text = str(exc.value.code)
    assert message in text and "\n" not in text
