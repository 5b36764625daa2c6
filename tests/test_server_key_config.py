"""A profile with its own `--config` and an API key: SGLang reads one --config, so the key is
merged into a private copy of the profile's file; a server that still answers without the key
is stopped, never reported ready."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import httpx
import pytest

from console.errors import UsageError
from console.host.local import LocalTransport
from console.server.config_merge import config_path, merge_key, with_config
from console.server.events import LifecycleDone
from console.server.lifecycle import LifecycleError
from tests.support.server_fixtures import ServerEnv

SECRET = "sk-conf-0123456789"


def test_merge_adds_the_key_and_keeps_the_profiles_options() -> None:
    text = "# mine\nmax-running-requests: 7\napi-key: old\n  # stray\ncuda-graph-bs: [1, 2]\n"
    merged = merge_key(text, 'k"\\1', "mine.yaml")
    assert "max-running-requests: 7" in merged and "cuda-graph-bs: [1, 2]" in merged
    assert "old" not in merged and merged.count("api-key") == 1
    assert merged.endswith('api-key: "k\\"\\\\1"\n')  # quoted as a JSON (= YAML) string
    for bad in ("{max-running-requests: 7}\n", "a: 1\n---\nb: 2\n"):
        with pytest.raises(UsageError, match=r"mine\.yaml"):
            merge_key(bad, "k", "mine.yaml")


def test_the_profiles_config_is_replaced_not_doubled() -> None:
    argv = ["sglang", "--config", "mine.yaml", "--tp", "2"]
    assert config_path(argv) == (1, "mine.yaml")
    assert with_config(argv, "/run/s.yaml") == ["sglang", "--config", "/run/s.yaml", "--tp", "2"]
    assert with_config(["x", "--config=m.yaml"], "s.yaml") == ["x", "--config", "s.yaml"]
    assert with_config(["x"], "s.yaml") == ["x", "--config", "s.yaml"]


async def test_profile_config_and_api_key_both_reach_the_server(
        server_env: ServerEnv, local_transport: LocalTransport) -> None:
    (server_env.root / "run").mkdir(exist_ok=True)
    own = server_env.root / "run" / "mine.yaml"
    own.write_text("max-running-requests: 7\n")
    life = server_env.lifecycle(local_transport)
    life._local_env = {"PLATEAU_TEST_KEY": SECRET}
    profile = server_env.profile(config="mine.yaml").model_copy(
        update={"api_key_env": "PLATEAU_TEST_KEY"})
    await life.restart("keyed", profile, server_env.record_event)
    base = f"http://127.0.0.1:{server_env.port}"
    assert httpx.get(f"{base}/v1/models", trust_env=False).status_code == 401
    auth = {"Authorization": f"Bearer {SECRET}"}
    info = httpx.get(f"{base}/server_info", trust_env=False, headers=auth).json()
    assert info["max_running_requests"] == 7  # the profile's own file still applies
    assert own.read_text() == "max-running-requests: 7\n"  # and is left as it was
    assert list((server_env.root / "run").glob("*secret*")) == []
    assert any(isinstance(e, LifecycleDone) for e in server_env.events)
    await life.stop()


async def test_a_server_that_ignores_the_key_is_stopped(
        server_env: ServerEnv, local_transport: LocalTransport, tmp_path: Path) -> None:
    # A launcher that drops --config on the way: the server starts without its key.
    dropper = tmp_path / "drop_config.py"
    dropper.write_text(
        "import runpy, sys\n"
        "args = sys.argv[2:]  # after the module name, which tells discovery it is the sim\n"
        "i = args.index('--config') if '--config' in args else len(args)\n"
        "sys.argv = ['sim'] + args[:i] + args[i + 2:]\n"
        "runpy.run_module('console.sim', run_name='__main__')\n")
    life = server_env.lifecycle(local_transport)
    life._local_env = {"PLATEAU_TEST_KEY": SECRET}
    profile = server_env.profile().model_copy(
        update={"api_key_env": "PLATEAU_TEST_KEY",
                "launch": [sys.executable, str(dropper), "console.sim"]})
    with pytest.raises(LifecycleError, match="without the API key"):
        await life.restart("keyless", profile, server_env.record_event)
    record = json.loads((server_env.root / "run" / "server.json").read_text())
    assert record["state"] == "failed"
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"http://127.0.0.1:{server_env.port}/health", trust_env=False, timeout=2)


async def test_a_key_file_left_by_a_killed_client_goes_at_the_next_stop(
        server_env: ServerEnv, local_transport: LocalTransport) -> None:
    run_dir = server_env.root / "run"
    run_dir.mkdir(exist_ok=True)
    left = run_dir / "launch-20261201T000000.000000Z-secret.yaml"
    left.write_text(f'api-key: "{SECRET}"\n')
    left.chmod(0o600)
    keep = run_dir / "notes.yaml"
    keep.write_text("mine\n")
    life = server_env.lifecycle(local_transport)
    await life.stop()
    assert not left.exists() and keep.exists()
