"""Regenerate tests/data/bench/: real SGLang bench_serving output against the simulator.

    .venv/bin/python tests/bench/bench_client_fixtures.py

Runs SGLang 0.5.23's own client (the torch-free shim, tests/support/sglang_bench.py) against
`python -m console.sim` in ideal-timing mode, for /generate and /v1/chat/completions, and keeps
its printed output (`*.out`, stdout+stderr) and its JSONL record (`*.jsonl`, bare Infinity).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.support.sglang_bench import SHIM_PATH  # noqa: E402
from tests.support.sim_fixtures import free_port  # noqa: E402
from tests.support.tokenizer import build_tokenizer  # noqa: E402

OUT = ROOT / "tests" / "data" / "bench"
CASES = [
    ("generate-c4", "sglang", "4"),
    ("chat-c2", "sglang-oai-chat", "2"),
]


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="plateau-benchfx-"))
    tokenizer = build_tokenizer(tmp / "tok")
    port = free_port()
    sim = subprocess.Popen(
        [sys.executable, "-m", "console.sim", "--model-path", "test-model", "--port", str(port),
         "--sim-startup-seconds", "0", "--sim-seed", "3", "--sim-ideal-ttft-ms", "20",
         "--sim-ideal-itl-ms", "5", "--sim-state-file", str(tmp / "gpu.json")],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        for _ in range(200):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/ready", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        for name, backend, conc in CASES:
            jsonl = tmp / f"{name}.jsonl"
            argv = [
                sys.executable, str(SHIM_PATH), "--backend", backend,
                "--base-url", f"http://127.0.0.1:{port}", "--dataset-name", "random-ids",
                "--tokenizer", str(tokenizer), "--random-input-len", "64",
                "--random-output-len", "16", "--random-range-ratio", "1", "--num-prompts", "8",
                "--max-concurrency", conc, "--request-rate", "inf", "--warmup-requests", "1",
                "--flush-cache", "--output-file", str(jsonl), "--seed", "1", "--disable-tqdm",
            ]  # fmt: skip
            if backend == "sglang":
                argv.append("--tokenize-prompt")
            env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
            done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
            (OUT / f"{name}.out").write_text(done.stdout + done.stderr)
            shutil.copy(jsonl, OUT / f"{name}.jsonl")
            print(name, "exit", done.returncode)
    finally:
        sim.terminate()
        sim.wait(timeout=20)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
