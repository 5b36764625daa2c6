"""Fixtures for the server lifecycle tests: a host config with a private run dir, simulator
profiles on a free port, and a flag-discovery cache per test.

    def test_x(server_env, local_transport):
        life = server_env.lifecycle(local_transport)
        await life.restart("a", server_env.profile(**{"moe-runner-backend": "triton"}))
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from console.config_models import FlagValue, HostConfig, ServerProfile
from console.host.transport import Transport
from console.server.discovery import FlagDiscovery
from console.server.events import LifecycleEvent
from console.server.lifecycle import LifecycleOptions, ServerLifecycle

SIM_LAUNCH = [sys.executable, "-m", "console.sim"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class ServerEnv:
    root: Path
    port: int
    host: HostConfig
    cache_dir: Path
    events: list[LifecycleEvent] = field(default_factory=list)
    lifecycles: list[ServerLifecycle] = field(default_factory=list)

    def profile(self, **flags: FlagValue) -> ServerProfile:
        # `startup_seconds` (the simulator's startup time) rides in **flags: as a parameter of
        # its own, typed float, mypy would refuse every `**{"hyphenated-flag": "value"}` call.
        startup_seconds = flags.pop("startup_seconds", 0.0)
        base: dict[str, FlagValue] = {
            "sim-startup-seconds": startup_seconds,
            "sim-state-file": str(self.root / "gpu-state.json"),
            "sim-num-gpus": 2,
        }
        return ServerProfile(
            launch=list(SIM_LAUNCH),
            model_path="test/Example-MoE",
            port=self.port,
            flags={**base, **flags},
        )

    def lifecycle(self, transport: Transport, **options: float) -> ServerLifecycle:
        opts = LifecycleOptions(
            drain_timeout_s=options.pop("drain_timeout_s", 10.0),
            startup_timeout_s=options.pop("startup_timeout_s", 30.0),
            port_free_timeout_s=options.pop("port_free_timeout_s", 5.0),
            poll_interval_s=options.pop("poll_interval_s", 0.05),
        )
        life = ServerLifecycle(
            transport,
            self.host,
            discovery=FlagDiscovery(transport, self.host, cache_dir=self.cache_dir),
            options=opts,
        )
        self.lifecycles.append(life)
        return life

    def record_event(self, event: LifecycleEvent) -> None:
        self.events.append(event)

    def logs(self) -> list[Path]:
        return sorted((self.root / "run" / "logs").glob("sglang-*.log"))


def _kill_leftovers(env: ServerEnv) -> None:
    """Teardown safety net: SIGKILL any server group a test left behind (by its record)."""
    import json
    import os
    import signal

    record = env.root / "run" / "server.json"
    if not record.exists():
        return
    try:
        data = json.loads(record.read_text())
        pgid = int(data["pgid"])
        if pgid > 1 and pgid != os.getpgid(0):
            os.killpg(pgid, signal.SIGKILL)
    except (OSError, ValueError, KeyError):
        pass


@pytest.fixture(scope="session")
def server_flag_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One flag cache for the session: `--help` runs once per launch command, like in use."""
    return tmp_path_factory.mktemp("flag-cache")


@pytest.fixture
def server_env(tmp_path: Path, server_flag_cache: Path) -> Iterator[ServerEnv]:
    host = HostConfig(
        name=f"srv-{tmp_path.name[-20:]}".replace("_", "-"),
        local=True,
        python=sys.executable,
        run_dir=str(tmp_path / "run"),
    )
    env = ServerEnv(root=tmp_path, port=free_port(), host=host, cache_dir=server_flag_cache)
    yield env
    _kill_leftovers(env)
