"""N simulated hosts behind one real sshd: each its own run_dir, simulated SGLang server
(console.sim, 8 simulated GPUs, metrics on) and GPU state file, reached over SSH as a separate
host (its own connection). The servers are started the way Plateau starts them (the server
lifecycle, over a LocalTransport on the same run_dir), before the console opens, as a fleet
that is already serving."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from pathlib import Path

from console.config_models import HostConfig, PlateauConfig, ServerProfile, UiConfig
from console.host.local import LocalTransport
from console.session import adapters
from tests.support.server_fixtures import free_port
from tests.support.sshd import Sshd


def fleet_config(root: Path, sshd: Sshd, count: int, *, gpus: int = 8,
                 offscreen_interval_s: float = 5.0) -> PlateauConfig:
    hosts, profiles = [], {}
    ports: set[int] = set()
    for index in range(count):
        name = f"sim-{index:02d}"
        run_dir = root / name
        run_dir.mkdir(parents=True, exist_ok=True)
        state = run_dir / "gpu-state.json"
        profiles[name] = ServerProfile(
            launch=[sys.executable, "-m", "console.sim"], model_path="test/Example-MoE",
            port=_unique_port(ports),
            flags={"tp-size": gpus, "enable-metrics": True, "sim-startup-seconds": 0,
                   "sim-state-file": str(state), "sim-num-gpus": gpus},
        )
        hosts.append(HostConfig(
            name=name, address="127.0.0.1", port=sshd.port, user=sshd.user,
            identity_files=[str(sshd.client_key)], known_hosts_file=str(sshd.known_hosts),
            python=sys.executable, run_dir=str(run_dir), profile=name,
            sim_state_file=str(state),
        ))
    return PlateauConfig(hosts=hosts, profiles=profiles,
                         ui=UiConfig(offscreen_interval_s=offscreen_interval_s))


def _unique_port(taken: set[int]) -> int:
    """A free port not handed to another host already: free_port() binds port 0 and lets it
    go, so 64 calls in a row repeat one now and then (a bench run failed on that)."""
    while (port := free_port()) in taken:
        pass
    taken.add(port)
    return port


async def start_servers(config: PlateauConfig, cache_dir: Path, parallel: int = 8) -> None:
    """Each host's simulated server, launched and followed until ready."""
    gate = asyncio.Semaphore(parallel)

    async def one(host: HostConfig) -> None:
        async with gate:
            local = host.model_copy(update={"local": True})
            transport = LocalTransport(host.name, run_dir=host.run_dir)
            await transport.connect()
            try:
                discovery = adapters.flag_discovery(transport, local, cache_dir)
                life = adapters.lifecycle(transport, local, discovery=discovery)
                from console.jobs import server as server_jobs

                await server_jobs.start(life, config, host.profile, wait=True)
            finally:
                await transport.close()

    await asyncio.gather(*(one(host) for host in config.hosts))


def stop_servers(config: PlateauConfig) -> None:
    """SIGKILL every simulated server's process group (by its launch record)."""
    for host in config.hosts:
        with contextlib.suppress(OSError, ValueError, KeyError):
            record = json.loads((Path(host.run_dir) / "server.json").read_text())
            pgid = int(record["pgid"])
            if pgid > 1 and pgid != os.getpgid(0):
                os.killpg(pgid, signal.SIGKILL)
