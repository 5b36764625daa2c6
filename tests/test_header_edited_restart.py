"""A restart into other flags under a profile's old name reads "(edited)" in the header
whoever made it (issue 41.7): the running server's launch record carries its command line,
the status poll hands it to the session, and the header compares it with the profile it is
named after. Before, only a restart this console kept for the run was marked; a restart by
the CLI or another console showed the old name alone over other flags.

The lifecycle half runs the simulator for real (local transport, real launch records, real
HTTP); the header half is the app with the demo host, fed the same event."""

from __future__ import annotations

from pathlib import Path

from console.app.contract import HostView
from console.config_models import PlateauConfig
from console.host.local import LocalTransport
from console.redact import redact_argv
from console.session.adapters import server_status
from console.session.events import ServerUpdate
from console.session.state import utc_now
from tests.support.server_fixtures import ServerEnv
from tests.test_app_flags_save import _app
from widgets.header import PlateauHeader


async def test_the_status_carries_the_command_line_of_whoever_restarted(
        server_env: ServerEnv, local_transport: LocalTransport) -> None:
    from console.app.app import runs_other_flags

    named = server_env.profile(**{"moe-runner-backend": "cutlass"})
    config = PlateauConfig(hosts=[server_env.host], profiles={"moe": named})
    mine = server_env.lifecycle(local_transport)
    await mine.start("moe", named)
    update, _record = await server_status(local_transport, server_env.host, config)
    assert update.profile == "moe" and update.argv is not None
    assert not runs_other_flags(named, update.argv)
    # someone else (another lifecycle: the CLI, a colleague's console) restarts into other
    # flags and keeps the name
    other = server_env.lifecycle(LocalTransport("other-client"))
    await other.restart("moe", server_env.profile(**{"moe-runner-backend": "triton"}))
    update, _record = await server_status(local_transport, server_env.host, config)
    assert update.profile == "moe" and update.argv is not None
    assert "triton" in update.argv and runs_other_flags(named, update.argv)
    await mine.stop()


async def test_the_header_reads_edited_over_other_flags_under_the_old_name(
        tmp_path: Path) -> None:
    app = _app(tmp_path)
    async with app.run_test(size=(160, 40)) as pilot:
        session = app.active_session
        # The replay's script (its own server update among it) is fed once the session starts,
        # after the first frame: the update below must come after it, not be overwritten by it.
        for _ in range(200):
            if session.state.server_state == "ready":
                break
            await pilot.pause(0.02)
        assert session.state.server_state == "ready", "the replay's script never arrived"
        named = app.config.profiles["cutlass-moe"]
        edited = named.model_copy(update={"flags": {**named.flags,
                                                     "moe-runner-backend": "triton"}})

        async def header_after(argv: list[str]) -> str:
            session.state.apply(ServerUpdate(host=session.host.name, state="ready",
                                             profile="cutlass-moe", since=utc_now(),
                                             argv=tuple(redact_argv(argv))))
            screen = app.screen
            assert isinstance(screen, HostView)
            screen.refresh_header(session.state)
            await pilot.pause()
            return str(screen.query_one(PlateauHeader).render())

        header = await header_after(edited.argv())
        assert 'profile "cutlass-moe" (edited)' in header, header
        header = await header_after(named.argv())  # restarted into its own flags again
        assert 'profile "cutlass-moe"' in header and "(edited)" not in header, header
