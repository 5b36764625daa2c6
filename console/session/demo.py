"""The demo's host config: a local simulated host with its run dir under a temp directory."""

from __future__ import annotations

import tempfile
from pathlib import Path

from console.config import LoadedConfig
from console.config_models import PlateauConfig
from console.demo import DEMO_HOST, demo_config


def demo_loaded_config(
    seed: int | None = None, startup_seconds: float = 4.0, run_dir: Path | None = None
) -> tuple[LoadedConfig, Path]:
    """A demo config (run dir created under the system temp dir unless given)."""
    directory = run_dir or Path(tempfile.mkdtemp(prefix="plateau-demo-"))
    directory.mkdir(parents=True, exist_ok=True)
    config = demo_config(directory, startup_seconds=startup_seconds)
    if seed is not None:
        config = _with_seed(config, seed)
    return LoadedConfig(config, None), directory


def _with_seed(config: PlateauConfig, seed: int) -> PlateauConfig:
    profiles = {
        name: profile.model_copy(update={"flags": {**profile.flags, "sim-seed": seed}})
        for name, profile in config.profiles.items()
    }
    return config.model_copy(update={"profiles": profiles})


def demo_profile(config: PlateauConfig) -> str:
    return config.host(DEMO_HOST).profile or next(iter(config.profiles))
