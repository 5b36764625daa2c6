"""The demo's config is built without validation (`built_in`: no pydantic validator is built
before the console's first frame); here every value it holds is validated, so a constant the
config models would refuse cannot hide behind the shortcut."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

from console.config import load_config
from console.config_models import HostConfig, PlateauConfig, ServerProfile, built_in
from console.demo import demo_config


def _validated(model: BaseModel) -> BaseModel:
    return type(model).model_validate(model.model_dump())


@pytest.mark.parametrize("seed", [None, 7])
@pytest.mark.parametrize("real_restarts", [False, True])
def test_demo_config_is_what_validation_makes(
    tmp_path: Path, seed: int | None, real_restarts: bool
) -> None:
    config = demo_config(tmp_path, port=30123, startup_seconds=0.5, seed=seed,
                         real_restarts=real_restarts)
    assert _validated(config) == config
    for part in [*config.hosts, *config.profiles.values(), *config.sweeps.values(), config.ui]:
        assert _validated(part) == part
    # and the types a validation would have made, not merely equal values
    assert all(isinstance(host, HostConfig) for host in config.hosts)
    assert all(isinstance(profile, ServerProfile) for profile in config.profiles.values())


def test_defaults_without_a_config_file_are_the_validated_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("PLATEAU_CONFIG", raising=False)
    loaded = load_config()
    assert loaded.path is None
    assert loaded.config == PlateauConfig() == PlateauConfig.model_validate({})


def test_built_in_is_not_validation() -> None:
    """What the shortcut skips, shown: a value validation refuses goes through built_in, so
    it is only for this code base's own constants (the test above holds the demo's)."""
    with pytest.raises(ValidationError):
        ServerProfile(model_path="m", port=0)
    assert built_in(ServerProfile, model_path="m", port=0).port == 0
