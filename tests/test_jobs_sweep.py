"""console.jobs' sweep: one implementation behind `plateau sweep` and the console's sweep key.

The CLI and the console's session sweep the same target with the same preset and store the
same run; the engine carries the profile's API key from this machine's environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.cli import main
from console.config import load_config
from console.config_models import HostConfig, ServerProfile, SweepPreset
from console.host.local import LocalTransport
from console.jobs.sweep import EngineOptions, SweepSetupError, make_engine
from console.jobs.target import Target
from console.session import adapters
from console.session.events import SessionEvent, SweepDone
from console.store.db import RunStore
from console.store.models import RunMeta
from tests.support.cli_hosts import write_local_ideal_config
from tests.support.sim_fixtures import SimProcess


def _config(tmp_path: Path, port: int) -> Path:
    return write_local_ideal_config(tmp_path / "plateau.toml", port, tmp_path / "run")


def _comparable(meta: RunMeta) -> dict[str, object]:
    """Everything stored about a run but what differs by nature between two runs."""
    return meta.model_dump(exclude={"server_info"})


async def test_cli_and_console_sweeps_store_identical_runs(
    ideal_sim: SimProcess, tmp_path: Path
) -> None:
    config_path = _config(tmp_path, ideal_sim.port)
    db = tmp_path / "h.db"
    assert await _cli(["--config", str(config_path), "sweep", "box", "--preset", "tiny",
                       "--db", str(db)]) == 0  # fmt: skip

    config = load_config(str(config_path)).config
    host = config.host("box")
    events: list[SessionEvent] = []
    transport = LocalTransport(host.name)
    await transport.connect()
    try:  # what HostSession.start_sweep("tiny") runs
        await adapters.run_sweep(transport, host, config, "tiny", "ideal", events.append, db)
    finally:
        await transport.close()
    assert isinstance(events[-1], SweepDone) and events[-1].ok

    with RunStore(db) as store:
        cli_run, console_run = (store.get_run(run_id) for run_id in (1, 2))
    assert _comparable(cli_run.summary.meta) == _comparable(console_run.summary.meta)
    meta = cli_run.summary.meta
    assert (meta.host, meta.profile, meta.label) == ("box", "ideal", "ideal (tiny)")
    assert meta.server_url == f"http://127.0.0.1:{ideal_sim.port}"
    assert meta.spec["concurrency"] == [1, 2]
    for run in (cli_run, console_run):
        assert [(s.concurrency, s.status) for s in run.steps] == [(1, "ok"), (2, "ok")]
        assert [s.metrics.completed for s in run.steps if s.metrics] == [2, 4]


async def _cli(argv: list[str]) -> int:
    """`main` runs its own event loop; in an async test it runs in a thread."""
    import asyncio

    return await asyncio.to_thread(main, argv)


def _target(profile: ServerProfile) -> Target:
    return Target(
        base_url="http://127.0.0.1:1",
        meta=RunMeta(host="h"),
        transport=LocalTransport("h"),
        host=HostConfig(name="h", local=True),
        profile=profile,
    )


async def test_native_engine_carries_the_profiles_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLATEAU_TEST_KEY", "sk-test-123")
    target = _target(ServerProfile(model_path="m", api_key_env="PLATEAU_TEST_KEY"))
    engine = await make_engine(SweepPreset(), target)
    assert ("Authorization", "Bearer sk-test-123") in engine.headers  # type: ignore[attr-defined]


async def test_missing_key_refuses_the_sweep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PLATEAU_TEST_KEY", raising=False)
    target = _target(ServerProfile(model_path="m", api_key_env="PLATEAU_TEST_KEY"))
    with pytest.raises(SweepSetupError, match=r"\$PLATEAU_TEST_KEY is not set"):
        await make_engine(SweepPreset(), target)


async def test_bench_serving_refuses_a_keyed_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both front ends refuse alike: bench_serving could only take the key on a command line."""
    monkeypatch.setenv("PLATEAU_TEST_KEY", "sk-test-123")
    target = _target(ServerProfile(model_path="m", api_key_env="PLATEAU_TEST_KEY"))
    with pytest.raises(SweepSetupError, match="native engine"):
        await make_engine(SweepPreset(engine="bench-serving"), target)
    monkeypatch.setenv("PLATEAU_OTHER_KEY", "sk-other")  # --api-key-env wins over the profile's
    options = EngineOptions(api_key_env="PLATEAU_OTHER_KEY")
    engine = await make_engine(SweepPreset(), target, options)
    assert ("Authorization", "Bearer sk-other") in engine.headers  # type: ignore[attr-defined]


async def test_no_key_no_header() -> None:
    engine = await make_engine(SweepPreset(), _target(ServerProfile(model_path="m")))
    assert not any(name == "Authorization" for name, _ in engine.headers)  # type: ignore[attr-defined]
