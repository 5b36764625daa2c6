"""The sweep -> diagnose loop against two SGLang versions of the simulator.

0.5.23 writes the captured decode sizes on the capture *end* line and its server_args as a
dict; 0.5.18 writes them on the *begin* line and prints `ServerArgs(...)`, and takes the old
`--cuda-graph-max-bs` as a deprecated alias (srt/server_args.py of v0.5.18). The ceiling must
be found either way, and the suggestion must use the flag name of the version the host runs.
Same method as test_diagnose_causes.py: a real sweep over HTTP, evidence stored in SQLite, the
sim's accelerated clock; the effect asserted (graph vs eager) is far beyond CPU noise.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.test_diagnose_causes import SHORT, Case, _sweep, _values


@pytest.mark.parametrize(("version", "graph_flag"), [
    ("0.5.23", "cuda-graph-max-bs-decode"),
    ("0.5.18", "cuda-graph-max-bs"),  # what a profile written for older releases says
])
def test_cuda_graph_ceiling_on_each_version(sim_factory: Any, tmp_path: Path, version: str,
                                            graph_flag: str) -> None:
    case = Case({"tp-size": 4, graph_flag: 8},
                {**SHORT, "concurrency": [4, 8, 16]})
    sim = sim_factory("--sim-speed", "4", "--sim-seed", "1", "--decode-log-interval", "4",
                      "--tp-size", "4", f"--{graph_flag}", "8", "--sim-sglang-version", version,
                      ready=False)
    run = asyncio.run(_sweep(sim, case, tmp_path / "run.db"))
    top = run.top()
    assert top.id == "cuda-graph-ceiling", run.diagnosis.causes
    assert _values(top, "Decode lines")["ceiling"] == 8
    assert top.suggest.flags == {"cuda-graph-max-bs-decode": 16}
    log = sim.log_text()
    if version == "0.5.18":
        assert "Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, " \
            "bs=[1, 2, 4, 8], avail mem=" in log
        assert "server_args=ServerArgs(" in log
    else:
        assert "Capture target decode CUDA graph end. bs=[1, 2, 4, 8], elapsed=" in log
