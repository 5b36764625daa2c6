"""An SSH drop during `server start`: the startup log follower resumes at the byte offset (no
line lost or repeated), the loss is said once, and the start still succeeds (real sshd)."""

from __future__ import annotations

import pytest

from console.server.events import LogLine, PhaseProgress
from tests.support.host_fixtures import make_ssh_transport
from tests.support.server_fixtures import ServerEnv
from tests.support.sshd import Sshd

pytestmark = pytest.mark.sshd


@pytest.mark.slow
async def test_drop_during_startup_resumes_at_the_byte(server_env: ServerEnv, sshd: Sshd) -> None:
    transport = make_ssh_transport(sshd)
    await transport.connect()
    life = server_env.lifecycle(transport, startup_timeout_s=120.0)
    events: list[object] = []
    dropped: list[int] = []

    def sink(event: object) -> None:
        events.append(event)
        if isinstance(event, LogLine) and not dropped:
            dropped.append(sshd.drop_connections())  # mid-startup, after the first line

    try:
        record = await life.start("a", server_env.profile(startup_seconds=4.0), sink)
        assert dropped and dropped[0] >= 1
        shown = [e.text for e in events if isinstance(e, LogLine)]
        assert record.log_path is not None
        # A line is what a terminal shows: tqdm's capture bar redraws with "\r" (SGLang's
        # decode_cuda_graph_runner.py), and the follower keeps the last frame.
        raw = (await transport.read_file(record.log_path)).decode().split("\n")
        written = [[p for p in line.split("\r") if p][-1] if "\r" in line else line
                   for line in raw]
        # every line up to the ready line, in order, none twice
        assert shown == written[: len(shown)]
        assert any("fired up and ready" in line for line in shown)
        notes = [e.message for e in events if isinstance(e, PhaseProgress)]
        assert sum("lost the connection" in n for n in notes) <= 1, notes
        assert not any("log follower stopped" in n for n in notes), notes
        assert len([n for n in notes if "lost" in n]) <= 2, notes  # follower + probe, once each
    finally:
        await life.stop()
        await transport.close()
