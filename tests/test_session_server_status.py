"""The status poll's view of a ready server that stops answering HTTP (hung, swamped, or a
loaded host): it stays "ready" with the news said, and is not reported as starting again
(the fleet's 64-host bench showed ready servers flipping to "starting" under load)."""

from __future__ import annotations

import os
import signal

import pytest

from console.config_models import PlateauConfig
from console.host.local import LocalTransport
from console.session import adapters
from tests.support.server_fixtures import ServerEnv


@pytest.mark.slow
async def test_a_ready_server_that_stops_answering_is_ready_and_said_so(
    server_env: ServerEnv, local_transport: LocalTransport
) -> None:
    life = server_env.lifecycle(local_transport)
    record = await life.restart("p", server_env.profile(), server_env.record_event)
    config = PlateauConfig(hosts=[server_env.host])
    try:
        first, _ = await adapters.server_status(local_transport, server_env.host, config)
        assert first.state == "ready" and first.detail == ""
        os.killpg(record.pgid, signal.SIGSTOP)  # alive, but no HTTP answer: a hung server
        try:
            hung, _ = await adapters.server_status(local_transport, server_env.host, config,
                                                   previous=first)
            # never seen ready, the same silence is a server still starting
            unseen, _ = await adapters.server_status(local_transport, server_env.host, config)
        finally:
            os.killpg(record.pgid, signal.SIGCONT)
        assert hung.state == "ready" and hung.detail == adapters.NO_ANSWER
        assert unseen.state == "starting"
        back, _ = await adapters.server_status(local_transport, server_env.host, config,
                                               previous=hung)
        assert back.state == "ready" and back.detail == ""
    finally:
        await life.stop()
