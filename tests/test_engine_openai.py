"""The engine seam against a strict OpenAI-compatible server (tests/support/strict_openai_server.py,
shaped like the real `transformers serve` the device ran): a sweep by URL completes every step,
the client adapts to what the server refuses, profiles launch it and an A/B through its engine
gives a verdict; and the click `--help` of the real `transformers serve` is read as flags."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from statistics import median

import httpx
import pytest

from console.bench.models import StepMetrics, StepResult
from console.bench.openai_probe import fit_client, refused_extension
from console.bench.workload import Workload
from console.config_models import ServerProfile
from console.diagnose.diagnose import diagnose, diagnose_stored, diagnosis_lines
from console.diagnose.models import ClientRecord, GpuPoint, RunEvidence, StepEvidence
from console.engines import engine_named
from console.server.flags_click import parse_click_help
from console.store.db import RunStore
from tests.support.cli_hosts import plateau_argv
from tests.support.server_fixtures import free_port

SERVER = Path(__file__).parent / "support" / "strict_openai_server.py"
HELP = Path(__file__).parent / "data" / "engines" / "transformers-serve" / "serve-help.txt"
MODEL = "/models/pinned-0.9b"


def _wait_health(url: str, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the strict server exited"
        try:
            if httpx.get(url + "/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise AssertionError("the strict server never answered /health")


@pytest.fixture
def strict_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    port = free_port()
    log = tmp_path / "strict.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, str(SERVER), "--model", MODEL, "--port", str(port),
             # 20 ms steps: a loaded machine's few ms of client turnaround stay small beside
             # them, so the cap (not the client) decides the throughput past 4 streams
             "--max-batch", "4", "--step-ms", "20"], stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_health(url, proc)
        yield url, log
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_the_real_transformers_serve_help_reads_as_flags() -> None:
    flags = parse_click_help(HELP.read_text()).flags
    assert flags["continuous-batching"].value_type == "switch"
    assert flags["no-cb-use-cuda-graph"].nargs == "0"  # click's `--x / --no-x`: both are flags
    assert flags["cb-max-batch-tokens"].value_type == "int"
    assert flags["cb-max-memory-percent"].value_type == "float"
    assert flags["reasoning"].choices == ("on", "off", "auto")
    assert "help" not in flags and "FORCE_MODEL" not in flags
    assert "paged attention" in flags["continuous-batching"].help


def test_each_engine_launches_the_model_its_own_way() -> None:
    def argv(engine: str) -> list[str]:
        return ServerProfile(engine=engine, model_path="/m", port=9, launch=["srv"],  # type: ignore[arg-type]
                             flags={"x": 1}).argv()

    assert argv("transformers-serve")[:2] == ["srv", "/m"]
    assert argv("openai")[:3] == ["srv", "--model", "/m"]
    assert argv("sglang")[:3] == ["srv", "--model-path", "/m"]
    assert ServerProfile(model_path="/m", model_arg="--served", launch=["s"]).argv()[:3] \
        == ["s", "--served", "/m"]


def test_a_refusal_names_the_extension_it_refuses() -> None:
    sent = frozenset({"ignore_eos", "continuous_usage_stats"})
    assert refused_extension("Unexpected fields in the request: {'ignore_eos'}", sent) \
        == "ignore_eos"
    assert refused_extension('{"loc":["body","ignore_eos"],"type":"extra_forbidden"}', sent) \
        == "ignore_eos"
    assert refused_extension("Server is pinned to '/m'; requested 'x'.", sent) is None


async def test_the_client_fits_itself_to_a_strict_server(
        strict_server: tuple[str, Path]) -> None:
    url, _log = strict_server
    fit = await fit_client(url, Workload(endpoint="completions", input_len=64, output_len=8,
                                         model="default"), engine_named("openai"))
    assert fit.workload.model == MODEL  # taken from the pinned server's refusal
    assert "ignore_eos" not in fit.workload.extensions
    # the server counts ceil(chars / 4) tokens: a workload word is longer than 4 characters
    assert 1.2 < fit.workload.tokens_per_word < 2.2
    assert any("ignore_eos" in note and "output lengths vary" in note for note in fit.notes)


def test_a_url_sweep_completes_every_step_on_a_strict_server(
        strict_server: tuple[str, Path], tmp_path: Path) -> None:
    url, log = strict_server
    proc = subprocess.run(
        plateau_argv("sweep", "--url", url, "--concurrency", "1,4,16", "--num-prompts", "32",
                     "--input-len", "48", "--output-len", "24", "--json",
                     "--db", str(tmp_path / "h.db")),
        capture_output=True, text=True, timeout=300, env={**os.environ, "NO_COLOR": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    steps = out["steps"]
    assert [s["status"] for s in steps] == ["ok", "ok", "ok"]
    assert all(s["metrics"]["completed"] == 32 for s in steps)
    notes = steps[0]["metrics"]["client_notes"]
    assert any("ignore_eos" in n for n in notes) and any("no cache flush" in n for n in notes)
    # output lengths vary (a quarter of prompts stop at EOS) and are counted from usage
    assert any(s["metrics"]["output_len_mismatches"] > 0 for s in steps)
    text = log.read_text()
    assert text.count('" 422') == 1  # the one probe: no measured request sent ignore_eos
    assert "flush_cache" not in text
    with sqlite3.connect(tmp_path / "h.db") as db:
        assert db.execute("SELECT server_engine FROM runs").fetchone()[0] == "openai"
    # The server decodes at most 4 at once: from 4 to 16 streams the client sees it, and no
    # log grammar is needed (client evidence only)
    named = {c["id"]: c for c in out["diagnosis"]["causes"]}
    assert "admission-queue" in named, out["diagnosis"]
    assert "c=4 -> c=16" in named["admission-queue"]["evidence"][0]["text"]


def _failed(index: int, error: str) -> StepResult:
    return StepResult(index=index, concurrency=2 ** index, status="failed", error=error,
                      metrics=StepMetrics(concurrency=2 ** index, errors=4))


def test_a_run_in_which_no_request_completed_has_no_cause() -> None:
    steps = [_failed(i, "HTTP 422: Unexpected fields in the request: {'ignore_eos'}")
             for i in range(4)]
    found = diagnose(steps, RunEvidence(sources=["client"]))
    assert found.causes == [] and found.candidates == []
    assert found.verdict == "no measurement"
    assert found.no_measurement is not None and "ignore_eos" in found.no_measurement
    assert found.no_measurement.count("ignore_eos") == 1  # each reason said once
    assert diagnosis_lines(found)[0].startswith("why: nothing to diagnose: no request completed")


def _config(path: Path, port: int, run_dir: Path) -> Path:
    launch = json.dumps([sys.executable, str(SERVER)])
    profile = (f'engine = "openai"\nlaunch = {launch}\nmodel_path = "{MODEL}"\nport = {port}\n')
    path.write_text(
        f'default_host = "box"\n[[hosts]]\nname = "box"\nlocal = true\nprofile = "small"\n'
        f'python = {json.dumps(sys.executable)}\nrun_dir = {json.dumps(str(run_dir))}\n'
        f'[profiles.small]\n{profile}flags = {{ max-batch = 2, step-ms = 5 }}\n'
        f'[profiles.big]\n{profile}flags = {{ max-batch = 16, step-ms = 5 }}\n'
        '[sweeps.ab]\nconcurrency = [16]\ninput_len = 32\noutput_len = 24\n'
        'prompts_per_concurrency = 3\nendpoint = "completions"\n')
    return path


@pytest.mark.slow
def test_an_ab_through_the_openai_engine_restarts_real_servers(tmp_path: Path) -> None:
    config = _config(tmp_path / "c.toml", free_port(), tmp_path / "run")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "NO_COLOR": "1"}
    proc = subprocess.run(
        plateau_argv("--config", str(config), "ab", "box", "--a", "small", "--b", "big",
                     # three repeats: two left a t interval (12.7 sd) that called +602% "within
                     # noise" on a loaded two-core machine
                     "--preset", "ab", "--repeats", "3", "--interleave", "--json",
                     "--db", str(tmp_path / "h.db")),
        capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert out["flags_differing"] == [{"flag": "max-batch", "a": "2", "b": "16"}]
    point = out["verdict"]["points"][0]
    # 8x the batch at 16 streams: several times the throughput, far outside any noise
    assert point["delta_pct"] > 100 and point["word"] == "better"


def test_the_real_h200_run_is_diagnosed_from_gpu_and_client_evidence(tmp_path: Path) -> None:
    """The stored sweep of the real transformers serve on the H200 (docs/real-engine.md): no
    log grammar, so the GPU and the client speak; the figures quoted are the run's own."""
    db = tmp_path / "h200.db"  # opened read-write (a store migrates): a copy
    shutil.copy(Path(__file__).parent / "data" / "engines" / "transformers-serve" / "h200-rig"
                / "history.db", db)
    with RunStore(db) as store:
        run = store.get_run(1)
        evidence = store.load_evidence(1)
        found = diagnose_stored(store, 1, run.steps)
    assert evidence is not None and run.summary.meta.server_engine == "transformers-serve"
    top = found.causes[0]
    assert top.id == "gpu-waits-on-host" and top.effect_kind == "bound"
    by_level = {s.concurrency: s for s in evidence.steps}
    low, high = by_level[min(by_level)], by_level[max(by_level)]
    assert low.client is not None and high.client is not None
    text = " ".join(e.text for e in top.evidence)
    assert f"{low.client.itl_p50_ms:.1f} ms at c={low.concurrency}" in text
    assert f"{high.client.itl_p50_ms:.1f} ms at c={high.concurrency}" in text
    utils = sorted(g.util for g in high.gpu if g.util is not None)
    assert f"at c={high.concurrency} a kernel ran in {median(utils) / 100:.0%}" in text
    assert top.suggest.flags == {"cb-use-cuda-graph": True}  # the A/B measured +185% for it


def _client_step(index: int, concurrency: int, itl: float, ttft: float, total: float,
                 util: float) -> StepEvidence:
    return StepEvidence(
        index=index, concurrency=concurrency, started_at=index, finished_at=index + 1,
        gpu=[GpuPoint(t=index + 0.5, index=0, util=util)],
        client=ClientRecord(target=concurrency, itl_p50_ms=itl, ttft_p50_ms=ttft,
                            total_tok_s=total))


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -5.0, 0.0])
def test_the_engine_rules_take_hostile_numbers_as_no_evidence(bad: float) -> None:
    """A stored run's numbers are untrusted: NaN, inf, negative or zero ITL/TTFT/utilisation
    give no cause and no crash (they are never divided by nor quoted)."""
    steps = [_client_step(0, 1, bad, bad, 100.0, bad), _client_step(1, 64, 90.0, 900.0,
                                                                     100.0, bad)]
    results = [StepResult(index=s.index, concurrency=s.concurrency, status="ok",
                          metrics=StepMetrics(concurrency=s.concurrency, completed=4,
                                              total_tok_s=100.0)) for s in steps]
    found = diagnose(results, RunEvidence(sources=["client", "gpu"], steps=steps))
    named = {c.id for c in [*found.causes, *found.candidates]}
    assert not named & {"gpu-waits-on-host", "admission-queue"}
    assert "nan" not in " ".join(diagnosis_lines(found)).lower()


@pytest.mark.parametrize(("short", "long"), [(32, 3_000_000), (32, 33), (10, 5)])
def test_a_usage_no_tokenizer_gives_is_not_believed(short: int, long: int) -> None:
    """The server's usage is untrusted: tokens per word outside what any tokenizer does
    (a million prompts' worth, or a word in 1/128 of a token) keep prompts in words."""
    from console.bench.openai_probe import _calibrated

    notes: list[str] = []
    workload = Workload(endpoint="completions", input_len=64, output_len=8)
    assert _calibrated(workload, [short, long], notes).tokens_per_word == 1.0
    assert notes and "prompt lengths are in words" in notes[0]
