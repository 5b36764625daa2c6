"""Numbers that agree (issue 26, item 11), below the screen: the server's version is known
the moment a start says READY (`plateau snapshot --until ready` showed "sglang ?" beside it)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from console.cli import main
from console.host.local import LocalTransport
from console.session.adapters import lifecycle_sink
from console.session.events import ServerStatus, SessionEvent
from tests.support.server_fixtures import ServerEnv


async def test_the_ready_a_start_reports_names_the_servers_version(
    server_env: ServerEnv, local_transport: LocalTransport
) -> None:
    emitted: list[SessionEvent] = []
    sink = lifecycle_sink(server_env.host.name, emitted.append, "sim")
    life = server_env.lifecycle(local_transport)
    await life.start("sim", server_env.profile(), sink)
    try:
        info = httpx.get(f"http://127.0.0.1:{server_env.port}/server_info", timeout=5,
                         trust_env=False).json()
        ready = [e for e in emitted if isinstance(e, ServerStatus) and e.state == "ready"]
        assert [e.version for e in ready] == [info["version"]] == ["0.5.23"]
    finally:
        await life.stop()


@pytest.mark.slow
@pytest.mark.parametrize("size", ["80x24", "120x40"])
def test_snapshot_until_ready_shows_the_version_beside_ready(tmp_path: Path, size: str) -> None:
    out = tmp_path / "ready.txt"
    assert main(["snapshot", "--demo", "--seed", "1", "--until", "ready", "--size", size,
                 "--out", str(out)]) == 0
    header = out.read_text().splitlines()[0]
    assert "READY" in header and "sglang 0.5.23 ·" in header, header
