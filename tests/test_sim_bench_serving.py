"""SGLang's own benchmark client, unmodified, against the simulator (Appendix C shim)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.sglang_bench import SHIM_PATH
from tests.support.sim_fixtures import SimFactory, SimProcess
from tests.support.tokenizer import build_tokenizer

pytest.importorskip("numpy", reason="needs tests/requirements-bench.txt")
pytest.importorskip("transformers", reason="needs tests/requirements-bench.txt")

RESULT_LABELS = [
    "============ Serving Benchmark Result ============",
    "Successful requests:                     12",
    "Total input tokens:",
    "Total generated tokens:                  192",
    "Total generated tokens (retokenized):    192",
    "Request throughput (req/s):",
    "Output token throughput (tok/s):",
    "Total token throughput (tok/s):",
    "Mean TTFT (ms):",
    "Median TPOT (ms):",
    "P99 ITL (ms):",
    "Max ITL (ms):",
]


@pytest.mark.parametrize("backend", ["sglang", "sglang-oai"])
def test_bench_serving_runs_against_sim(
    backend: str, sim_factory: SimFactory, tmp_path: Path
) -> None:
    sim: SimProcess = sim_factory("--sim-speed", "20")
    tok = build_tokenizer(tmp_path / "tok")
    cmd = [
        sys.executable, str(SHIM_PATH), "--backend", backend, "--dataset-name", "random-ids",
        "--tokenizer", str(tok), "--host", "127.0.0.1", "--port", str(sim.port),
        "--num-prompts", "12", "--random-input-len", "64", "--random-output-len", "16",
        "--random-range-ratio", "1", "--max-concurrency", "4", "--disable-tqdm",
        "--output-file", str(tmp_path / "out.jsonl"),
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=90, env=env,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert f"Backend:                                 {backend}" in out
    for label in RESULT_LABELS:
        assert label in out, f"missing {label!r} in:\n{out}"
    assert (tmp_path / "out.jsonl").read_text().count("\n") == 1
    # The sim saw the requests: access lines for the backend's endpoint.
    path = "/generate" if backend == "sglang" else "/v1/completions"
    assert f'"POST {path} HTTP/1.1" 200 OK' in sim.log_text()
