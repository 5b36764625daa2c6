"""A server started with --api-key: the sim enforces it as SGLang 0.5.23 does, `plateau sweep`
sends it, and the key (which SGLang's /server_info reports verbatim) never reaches the history
database."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from console.cli import main
from console.store.db import RunStore
from console.store.models import RunMeta
from tests.support.sim_fixtures import SimFactory

SECRET = "sk-review-0123456789abcdef"


def test_sim_enforces_the_api_key_like_sglang(sim_factory: SimFactory) -> None:
    sim = sim_factory("--api-key", SECRET, "--enable-metrics")
    auth = {"Authorization": f"Bearer {SECRET}"}
    for path in ("/health", "/ready", "/metrics"):  # probes are always open
        assert httpx.get(sim.base_url + path, timeout=10).status_code == 200, path
    for path in ("/v1/models", "/server_info", "/model_info"):
        resp = httpx.get(sim.base_url + path, timeout=10)
        assert resp.status_code == 401 and resp.json() == {"error": "Unauthorized"}, path
        assert httpx.get(sim.base_url + path, headers=auth, timeout=10).status_code == 200
    wrong = {"Authorization": "Bearer nope"}
    assert httpx.post(sim.base_url + "/flush_cache", headers=wrong, timeout=10).status_code == 401
    assert httpx.post(sim.base_url + "/flush_cache", headers=auth, timeout=10).status_code == 200
    body = {"text": "hi", "sampling_params": {"max_new_tokens": 2}}
    assert httpx.post(sim.base_url + "/generate", json=body, timeout=10).status_code == 401
    # SGLang 0.5.23 puts every resolved ServerArgs field in /server_info, the key included.
    info = httpx.get(sim.base_url + "/server_info", headers=auth, timeout=10).json()
    assert info["api_key"] == SECRET


def test_history_never_stores_server_secrets(tmp_path: Path) -> None:
    info = {
        "version": "0.5.23",
        "api_key": SECRET,
        "admin_api_key": SECRET + "-admin",
        "tp_size": 8,
        "launch_command": f"python3 -m sglang.launch_server --api-key {SECRET} --tp 8 "
        f"--admin-api-key={SECRET}-admin",
        "internal_states": [{"api_key": SECRET, "tp_size": 8}],
    }
    db = tmp_path / "h.db"
    with RunStore(db) as store:
        run = store.create_run(RunMeta(host="box", server_info=info))
        other = store.create_run(RunMeta(host="box"))
        store.update_meta(other, server_info=info)
        got = store.get_run(run).summary.meta.server_info
    assert got is not None and got["tp_size"] == 8 and got["version"] == "0.5.23"
    assert got["api_key"] == "<redacted>" and got["internal_states"][0]["api_key"] == "<redacted>"
    assert "--tp 8" in got["launch_command"]
    for path in tmp_path.iterdir():
        assert SECRET.encode() not in path.read_bytes(), path


def test_sweep_of_a_keyed_server_authenticates(
    sim_factory: SimFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    sim = sim_factory("--api-key", SECRET, "--sim-ideal-ttft-ms", "5", "--sim-ideal-itl-ms", "2")
    monkeypatch.setenv("PLATEAU_REVIEW_KEY", SECRET)
    config = tmp_path / "c.toml"
    config.write_text(
        f'[[hosts]]\nname = "box"\nlocal = true\nprofile = "keyed"\n'
        f'[profiles.keyed]\nmodel_path = "test-model"\nport = {sim.port}\n'
        f'api_key_env = "PLATEAU_REVIEW_KEY"\n'
    )
    db = tmp_path / "h.db"
    argv = ["--config", str(config), "sweep", "box", "--concurrency", "1", "--input-len", "8",
            "--output-len", "4", "--num-prompts", "2", "--json", "--db", str(db)]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    data = json.loads(capsys.readouterr().out)
    assert data["steps"][0]["status"] == "ok" and data["steps"][0]["metrics"]["completed"] == 2
    with RunStore(db) as store:
        info = store.get_run(data["run_id"]).summary.meta.server_info
    assert info is not None and info["version"] == "0.5.23"  # the snapshot was taken
    assert SECRET.encode() not in db.read_bytes()


async def test_bench_serving_result_file_is_removed_from_the_host(tmp_path: Path) -> None:
    """bench_serving's JSONL record embeds the full /server_info (the API key with it): the
    per-step file must not stay behind in the host's /tmp."""
    import sys

    from console.bench.bench_serving import BenchServingEngine
    from console.config_models import SweepPreset
    from console.host.local import LocalTransport

    fake = tmp_path / "fake_bench.py"
    fake.write_text(
        "import json, sys\n"
        "out = sys.argv[sys.argv.index('--output-file') + 1]\n"
        "rec = {'completed': 2, 'duration': 1.0, 'total_throughput': 10.0,\n"
        f"       'server_info': {{'api_key': {SECRET!r}}}}}\n"
        "open(out, 'a').write(json.dumps(rec) + '\\n')\n"
    )
    transport = LocalTransport("local")
    await transport.connect()
    try:
        engine = BenchServingEngine(transport, host_base_url="http://127.0.0.1:1",
                                    command=[sys.executable, str(fake)], workdir=str(tmp_path))
        spec = SweepPreset(concurrency=[1], num_prompts=2, flush_cache=False)
        outcome = await engine.run_step("http://127.0.0.1:1", spec, 0, 1, lambda e: None)
    finally:
        await transport.close()
    assert outcome.metrics.completed == 2 and outcome.metrics.total_tok_s == 10.0
    assert "server_info" not in (outcome.raw or {})
    assert not list(tmp_path.glob("plateau-bench-*.jsonl"))


def test_a_huge_server_info_is_bounded_in_the_history(tmp_path: Path) -> None:
    """A 10 MB /server_info once added 10.5 MB to every stored run."""
    info = {"version": "0.5.23", "api_key": SECRET, "blob": "x" * 10_000_000,
            "many": list(range(100_000)), "deep": {"a": {"b": {"c": {"d": {"e": {"f": {
                "g": {"h": {"i": 1}}}}}}}}}}
    db = tmp_path / "h.db"
    with RunStore(db) as store:
        run = store.create_run(RunMeta(host="box", server_info=info))
        got = store.get_run(run).summary.meta.server_info
    assert got is not None and got["version"] == "0.5.23" and got["api_key"] == "<redacted>"
    assert len(got["blob"]) < 3000 and "more characters" in got["blob"]
    assert len(got["many"]) == 201 and "more items" in got["many"][-1]
    assert db.stat().st_size < 1_000_000
