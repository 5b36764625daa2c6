"""App sweeps authenticate to a server started with an API key (the key comes from this
machine's environment, named by the profile's `api_key_env`)."""

from __future__ import annotations

import pytest

from console.config_models import HostConfig, ServerProfile, SweepPreset
from console.host.local import LocalTransport
from console.session import adapters


async def test_native_engine_carries_the_profiles_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLATEAU_TEST_KEY", "sk-test-123")
    profile = ServerProfile(model_path="m", api_key_env="PLATEAU_TEST_KEY")
    host = HostConfig(name="h", local=True)
    engine = await adapters.make_engine(LocalTransport(), host, SweepPreset(), profile)
    assert ("Authorization", "Bearer sk-test-123") in engine.headers


async def test_missing_key_refuses_the_sweep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PLATEAU_TEST_KEY", raising=False)
    profile = ServerProfile(model_path="m", api_key_env="PLATEAU_TEST_KEY")
    host = HostConfig(name="h", local=True)
    with pytest.raises(adapters.SweepSetupError, match=r"\$PLATEAU_TEST_KEY is not set"):
        await adapters.make_engine(LocalTransport(), host, SweepPreset(), profile)


async def test_no_key_no_header() -> None:
    engine = await adapters.make_engine(
        LocalTransport(), HostConfig(name="h", local=True), SweepPreset(),
        ServerProfile(model_path="m"),
    )
    assert not any(name == "Authorization" for name, _ in engine.headers)
