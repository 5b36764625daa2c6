"""SGLang's own benchmark client, unmodified, against the simulator (Appendix C shim), and text
prompts counted as a real tokenizer counts them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from console.bench.openai_probe import fit_client
from console.bench.workload import Workload, sample_text
from console.engines import engine_named
from tests.support.sglang_bench import SHIM_PATH
from tests.support.sim_fixtures import SimFactory, SimProcess
from tests.support.tokenizer import build_bpe_tokenizer, build_tokenizer

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


def _bench_serving(tokenizer: Path, sim: SimProcess, cwd: Path, *args: str) -> str:
    """Run SGLang's client on `sim` with `args`; its stdout (it must succeed)."""
    cmd = [sys.executable, str(SHIM_PATH), "--dataset-name", "random-ids", "--tokenizer",
           str(tokenizer), "--host", "127.0.0.1", "--port", str(sim.port),
           "--random-range-ratio", "1", "--max-concurrency", "4", "--disable-tqdm", *args]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=90, env=env, cwd=cwd)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


@pytest.mark.parametrize("backend", ["sglang", "sglang-oai"])
def test_bench_serving_runs_against_sim(
    backend: str, sim_factory: SimFactory, tmp_path: Path
) -> None:
    sim: SimProcess = sim_factory("--sim-speed", "20")
    out = _bench_serving(
        build_tokenizer(tmp_path / "tok"), sim, tmp_path, "--backend", backend,
        "--num-prompts", "12", "--random-input-len", "64", "--random-output-len", "16",
        "--output-file", str(tmp_path / "out.jsonl"))
    assert f"Backend:                                 {backend}" in out
    for label in RESULT_LABELS:
        assert label in out, f"missing {label!r} in:\n{out}"
    assert (tmp_path / "out.jsonl").read_text().count("\n") == 1
    # The sim saw the requests: access lines for the backend's endpoint.
    path = "/generate" if backend == "sglang" else "/v1/completions"
    assert f'"POST {path} HTTP/1.1" 200 OK' in sim.log_text()


def _prompt_tokens_total(sim: SimProcess) -> float:
    text = httpx.get(f"{sim.base_url}/metrics").text
    return sum(float(line.split()[-1]) for line in text.splitlines()
               if line.startswith("sglang:prompt_tokens_total{"))


def test_text_prompts_arrive_at_the_asked_token_length(
        sim_factory: SimFactory, tmp_path: Path) -> None:
    """bench_serving's random prompts are token ids decoded to text (no --tokenize-prompt): on
    a real BPE they run several tokens into one word (these 16 x 256 decode to ~90 words a
    prompt), and a server counts them with its tokenizer, near the asked 256 each; counted as
    whitespace words they arrived at less than half."""
    sim = sim_factory("--sim-speed", "20", "--enable-metrics")
    before = _prompt_tokens_total(sim)
    out = _bench_serving(
        build_bpe_tokenizer(tmp_path / "bpe"), sim, tmp_path, "--backend", "sglang",
        "--num-prompts", "16", "--random-input-len", "256", "--random-output-len", "4",
        "--warmup-requests", "0", "--output-file", str(tmp_path / "o.jsonl"))
    assert "Total input tokens:                      4096" in out
    arrived = _prompt_tokens_total(sim) - before  # 0.43x as whitespace words
    assert 0.85 * 4096 <= arrived <= 1.15 * 4096, arrived


async def test_plateau_word_prompts_keep_their_length(sim_server: SimProcess) -> None:
    """Plateau's own OpenAI-endpoint prompts are short words, one token each on the simulator
    (Qwen2 makes them 1.7 a word; the probe calibrates that on a real server): the probe finds
    one token a word, and a 256-word prompt arrives as 256 tokens on both OpenAI endpoints."""
    workload = Workload(endpoint="completions", input_len=256, output_len=2)
    fit = await fit_client(sim_server.base_url, workload, engine_named("sglang"))
    assert fit.workload.tokens_per_word == 1.0 and fit.notes == ()
    prompt = sample_text(256)
    usage = httpx.post(f"{sim_server.base_url}/v1/completions", json={
        "model": "test-model", "prompt": prompt, "max_tokens": 2}).json()["usage"]
    assert usage["prompt_tokens"] == 256
    chat = httpx.post(f"{sim_server.base_url}/v1/chat/completions", json={
        "model": "test-model", "max_tokens": 2,
        "messages": [{"role": "user", "content": prompt}]}).json()["usage"]
    assert chat["prompt_tokens"] == 256 + 8  # the chat template's own tokens
