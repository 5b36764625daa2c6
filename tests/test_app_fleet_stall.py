"""A host that hangs or drops never stalls the other rows of the fleet view (issue 31).

Real sessions over real SSH: "healthy" and "dropped" log in to sshds on loopback (each its
own), "hung" to a port that accepts and never says a word (a hung sshd). Once "dropped" is
connected its sshd is stopped (the connection drops, reconnects are refused). The healthy
host's row must keep showing GPU samples taken after that, while "hung" never connects.
Not timed: only the order of what happens is checked."""

from __future__ import annotations

import asyncio
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from console.config import LoadedConfig
from console.config_models import HostConfig, PlateauConfig, UiConfig
from console.session.service import HostSession
from tests.support.app_fixtures import wait_until
from tests.support.sshd import Sshd, start_sshd
from widgets.fleet_table import FleetTable

pytestmark = pytest.mark.slow


@pytest.fixture
def silent_port() -> Iterator[tuple[int, socket.socket]]:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        yield listener.getsockname()[1], listener


def _ssh_host(name: str, sshd: Sshd, root: Path) -> HostConfig:
    return HostConfig(
        name=name, address="127.0.0.1", port=sshd.port, user=sshd.user,
        identity_files=[str(sshd.client_key)], known_hosts_file=str(sshd.known_hosts),
        python=sys.executable, run_dir=str(root / name),
        sim_state_file=str(root / name / "gpu-state.json"),
    )


def _row(app: Any, host: str) -> list[str]:
    table = app.screen.query_one(FleetTable)
    index = table.visible_hosts().index(host)
    return [cell.plain for cell in table.cells_at(index)]


async def test_a_hung_and_a_dropped_host_never_stall_the_others(
    tmp_path: Path, sshd: Sshd, silent_port: tuple[int, socket.socket],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from console.app.app import PlateauApp

    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")
    port, listener = silent_port
    doomed = start_sshd(tmp_path / "sshd-doomed")
    hosts = [
        _ssh_host("healthy", sshd, tmp_path),
        HostConfig(name="hung", address="127.0.0.1", port=port, user="nobody",
                   known_hosts_file=str(tmp_path / "known_hosts")),
        _ssh_host("dropped", doomed, tmp_path),
    ]
    config = PlateauConfig(hosts=hosts, ui=UiConfig(gpu_interval_s=0.5))
    sessions = [HostSession(h, config) for h in hosts]
    healthy, hung, dropped = sessions
    app = PlateauApp(LoadedConfig(config, None), sessions, start_screen="fleet")
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            loop = asyncio.get_running_loop()
            listener.settimeout(60)
            accepted, _ = await loop.run_in_executor(None, listener.accept)
            await wait_until(pilot, lambda: dropped.state.gpu_sample is not None,
                             "the doomed host's first GPU sample", timeout=60)
            doomed.drop_connections()  # its sessions' sshd children: the connection drops
            doomed.stop()  # and the listener: reconnects are refused
            await wait_until(pilot, lambda: dropped.state.connection != "connected",
                             "the dropped host to notice", timeout=60)
            dropped_at = app.clock()
            # The healthy row goes on: it shows a GPU sample taken after the drop.

            def fresh() -> bool:
                screen: Any = app.screen
                summary = next(s for s in screen.summaries if s.host == "healthy")
                gpus = summary.gpus
                return (gpus is not None and gpus.age_s is not None
                        and healthy.state.gpus_at is not None
                        and healthy.state.gpus_at > dropped_at
                        and (summary.at - dropped_at).total_seconds() > gpus.age_s)

            await wait_until(pilot, fresh, "a healthy row newer than the drop", timeout=60)
            # The hung host never got past its handshake (it times out, is tried again).
            assert hung.state.connection in ("connecting", "failed")
            healthy_row, hung_row, dropped_row = (_row(app, h.name) for h in hosts)
            assert healthy_row[1] != "connecting" and healthy_row[3].endswith("%")
            assert hung_row[1] in ("connecting", "failed")
            assert dropped_row[1] in ("lost", "reconnecting", "failed")
            accepted.close()
    finally:
        for session in sessions:
            await session.close()
        doomed.stop()
