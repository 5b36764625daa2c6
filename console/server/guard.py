"""A demo server that dies with its owner.

`plateau demo` and `plateau sweep --demo` start a simulated server (detached, so restarts
work like on a real host) in a temp run dir. If the owner is SIGKILLed or its terminal closes,
its own cleanup never runs; PR_SET_PDEATHSIG would not reach the server (a grandchild in its
own session). So a small host-side guard is started first: it holds a pipe from the owner
(its stdout) and, when the owner goes (pipe closed, or a signal), stops the server that the
run dir's launch record proves Plateau started and removes the run dir.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from console.config_models import HostConfig
from console.errors import PlateauError
from console.host.transport import Transport
from console.server.hostscript import stream_host_script


@asynccontextmanager
async def owner_guard(
    transport: Transport, host: HostConfig, *, stop_server: bool, remove_run_dir: bool
) -> AsyncIterator[None]:
    """Guard `host.run_dir` for the duration; on exit (or the owner's death) clean up."""
    stream = await stream_host_script(
        transport, host.python, "guard",
        {"run_dir": host.run_dir, "stop_server": stop_server, "remove": remove_run_dir},
    )
    try:
        async for line in stream:
            if '"guarding"' in line and json.loads(line).get("state") == "guarding":
                break
        else:
            raise PlateauError(f"{host.name}: the cleanup guard did not start "
                               f"(exit {stream.exit_status})")
    except BaseException:
        await stream.close()
        raise
    try:
        yield
    finally:
        await stream.close()  # the guard cleans up now, as it would after our death
