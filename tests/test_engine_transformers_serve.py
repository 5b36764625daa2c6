"""The whole loop against a real inference engine nobody here wrote: Hugging Face
`transformers serve` (continuous batching, on the CPU) in its own venv (.venv-engine, made by
.ci/run from tests/engine-requirements.txt), serving a tiny random-init Llama built here
(tests/bench/real_engine/make_model.py; nothing downloaded). Plateau validates the profile
against the real `--help`, starts the server, sweeps it by its profile (the real server refuses
`ignore_eos`, has no cache flush and a broken /v1/models) and stops it."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli_hosts import plateau_argv
from tests.support.server_fixtures import free_port

ROOT = Path(__file__).resolve().parent.parent
ENGINE_VENV = ROOT / ".venv-engine"
MAKE_MODEL = ROOT / "tests" / "bench" / "real_engine" / "make_model.py"


def _engine_python() -> Path:
    python = ENGINE_VENV / "bin" / "python"
    if not python.exists():
        if os.environ.get("CI"):  # CI makes the venv: its absence is a failure there
            raise AssertionError(f"{ENGINE_VENV} is missing: .ci/run makes it")
        pytest.skip("no .venv-engine here (bash .ci/run makes it)")
    return python


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    python = _engine_python()
    out = tmp_path_factory.mktemp("model")
    subprocess.run([str(python), str(MAKE_MODEL), str(out), "--layers", "2", "--hidden", "256",
                    "--vocab", "2000"], check=True, capture_output=True, timeout=600,
                   env={**os.environ, "OMP_NUM_THREADS": "1"})
    return out


@pytest.fixture
def engine_config(tmp_path: Path, tiny_model: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    bin_dir = ENGINE_VENV / "bin"
    config = tmp_path / "config.toml"
    config.write_text(
        'default_host = "cpu"\n[[hosts]]\nname = "cpu"\nlocal = true\nprofile = "cb"\n'
        f'run_dir = {json.dumps(str(tmp_path / "run"))}\n'
        f'python = {json.dumps(str(bin_dir / "python"))}\n'
        '[profiles.cb]\nengine = "transformers-serve"\n'
        f'launch = [{json.dumps(str(bin_dir / "transformers"))}, "serve"]\n'
        f'model_path = {json.dumps(str(tiny_model))}\nport = {free_port()}\n'
        'flags = { continuous-batching = true, device = "cpu", dtype = "float32", '
        'log-level = "info", no-cb-use-cuda-graph = true }\n'
        # One torch thread: on CI's two cores the suite's other tests, some timing a
        # simulator, run beside this server (torch takes every core by default).
        '[profiles.cb.env]\nOMP_NUM_THREADS = "1"\n'
        # The same server with other real flags, and one its --help refuses (a choice it lacks)
        '[profiles.small-batch]\nengine = "transformers-serve"\n'
        f'launch = [{json.dumps(str(bin_dir / "transformers"))}, "serve"]\n'
        f'model_path = {json.dumps(str(tiny_model))}\nport = {free_port()}\n'
        'flags = { continuous-batching = true, device = "cpu", dtype = "float32", '
        'log-level = "info", attn-implementation = "sdpa", cb-max-batch-tokens = 128 }\n'
        '[profiles.small-batch.env]\nOMP_NUM_THREADS = "1"\n'
        '[profiles.bad-choice]\nengine = "transformers-serve"\n'
        f'launch = [{json.dumps(str(bin_dir / "transformers"))}, "serve"]\n'
        f'model_path = {json.dumps(str(tiny_model))}\nport = 1\n'
        'flags = { continuous-batching = true, reasoning = "sometimes" }\n'
        '[sweeps.tiny]\nconcurrency = [1, 4]\ninput_len = 32\noutput_len = 8\n'
        'prompts_per_concurrency = 2\nendpoint = "completions"\n')
    env = {**os.environ, "PLATEAU_CONFIG": str(config), "HF_HUB_OFFLINE": "1",
           "XDG_CACHE_HOME": str(tmp_path / "cache"), "NO_COLOR": "1",
           "PLATEAU_DB": str(tmp_path / "history.db")}
    yield config, env
    subprocess.run(plateau_argv("server", "stop", "cpu"), env=env, capture_output=True,
                   timeout=120)


def _plateau(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(plateau_argv(*args), env=env, capture_output=True, text=True,
                          timeout=900)


@pytest.mark.slow
def test_a_real_transformers_serve_starts_sweeps_and_stops(
        engine_config: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    _config, env = engine_config
    start = _plateau(env, "server", "start", "cpu", "--startup-timeout", "600")
    assert start.returncode == 0, start.stdout[-2000:] + start.stderr[-2000:]
    # validated against the real click --help (the `--no-x` spelling is a flag there)
    assert "--help on cpu (transformers-serve 5." in start.stdout
    assert "transformers-serve 5." in start.stdout  # its version, from its distribution
    # its log is named for the engine that writes it (every log was "sglang-..." before)
    assert re.search(r"log: \S*/transformers-serve-\d{8}T[0-9.]+Z-cb\.log", start.stdout)
    sweep = _plateau(env, "sweep", "cpu", "--preset", "tiny", "--json")
    assert sweep.returncode == 0, sweep.stderr[-3000:]
    steps = json.loads(sweep.stdout)["steps"]
    assert [s["status"] for s in steps] == ["ok", "ok"]
    assert all(s["metrics"]["completed"] == 2 * s["concurrency"] for s in steps)
    notes = " ".join(steps[0]["metrics"]["client_notes"])
    assert "refuses ignore_eos (HTTP 422)" in notes  # what the real server answers
    assert "no cache flush" in notes
    # prompts are sized to its tokenizer: 32 tokens asked, within 10% per request
    step = steps[0]["metrics"]
    assert abs(step["input_tokens"] / step["completed"] - 32) <= 3.2
    with sqlite3.connect(env["PLATEAU_DB"]) as db:
        engine, version = db.execute("SELECT server_engine, server_version FROM runs").fetchone()
    assert engine == "transformers-serve"
    # No /server_info: the run keeps the version the launch recorded from the distribution
    # (an A/A's boot floor and an upgrade A/B are keyed by it; it was "" on the H200)
    assert version.startswith("5.") and f"transformers-serve {version}" in start.stdout
    # The console on it: the header names the engine, the log panel follows its log
    screen = tmp_path / "screen.txt"
    shot = _plateau(env, "snapshot", "cpu", "--until", "ready", "--size", "140x40",
                    "--out", str(screen))
    assert shot.returncode == 0, shot.stderr[-2000:]
    text = screen.read_text()
    assert "transformers-serve 5." in text.splitlines()[0]
    assert "POST /v1/completions" in text  # the sweep's requests, in the server's own log
    # A restart into other real flags; a flag value its --help refuses stops nothing
    refused = _plateau(env, "server", "restart", "cpu", "--profile", "bad-choice")
    assert refused.returncode != 0 and "reasoning" in refused.stdout + refused.stderr
    assert _plateau(env, "server", "status", "cpu").returncode == 0  # cb still runs
    moved = _plateau(env, "server", "restart", "cpu", "--profile", "small-batch",
                     "--startup-timeout", "600")
    assert moved.returncode == 0, moved.stdout[-2000:] + moved.stderr[-2000:]
    assert "--attn-implementation sdpa" in moved.stdout, moved.stdout[-2000:]
    assert "--cb-max-batch-tokens 128" in moved.stdout, moved.stdout
    status = _plateau(env, "server", "status", "cpu")
    assert "small-batch" in status.stdout and "transformers-serve 5." in status.stdout
    stop = _plateau(env, "server", "stop", "cpu")
    assert stop.returncode == 0, stop.stderr[-2000:]
    logs = list((tmp_path / "run" / "logs").glob("*.log"))
    assert logs and "Application startup complete." in logs[0].read_text()
