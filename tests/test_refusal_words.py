"""One refusal policy (console/server/refusal.py, issue 27 item 1): while a sweep holds the
host, a restart is refused in the same words by the console's footer, its palette and its key,
and by `plateau server restart` in another process (the host-side lease's HostBusy)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from console.app.bindings import BY_ID
from console.app.footer import PlateauFooter
from console.app.palette import PaletteProvider
from console.config import load_config_file
from console.host.local import LocalTransport
from console.server.lease import host_lease
from console.server.refusal import HostFacts, held_by, refusal
from tests.support.cli_hosts import finish, spawn_plateau, write_local_ideal_config
from tests.support.server_fixtures import free_port

SWEEPING = "a sweep is running"


def test_the_policy_names_what_holds_the_host() -> None:
    assert refusal("restart", HostFacts(sweep_running=True)) == SWEEPING
    assert refusal("restart", HostFacts(holder="sweep ideal (tiny)")) == SWEEPING
    assert held_by("sweep ideal (tiny)") == SWEEPING  # a sweep's lease purpose (console.jobs)
    assert held_by("A/B a vs b") == refusal("sweep", HostFacts(ab_running=True))
    assert held_by("tune cutlass-moe") == refusal("ab", HostFacts(tune_running=True))
    assert refusal("tune", HostFacts(replay=True)) == "this is a replay: it runs nothing on a host"
    assert refusal("sweep", HostFacts(server_state="starting")) == "server is starting"
    assert refusal("ab", HostFacts(profiles=1)) == "A/B needs two profiles"
    assert refusal("restart", HostFacts(connection="lost")) == "host lost"
    assert refusal("restart", HostFacts(profiles=2)) is None
    assert refusal("cancel-sweep", HostFacts()) == "no sweep or A/B is running"
    # a tune's sweep shows as the host's, but only the tune's own x stops it
    assert refusal("cancel-sweep", HostFacts(sweep_running=True, tune_running=True)) == (
        "a tune is running (T, then x stops it at a safe point)")
    assert refusal("cancel-sweep", HostFacts(sweep_running=True)) is None


async def test_footer_palette_and_key_refuse_a_restart_in_the_policys_words(
    app_factory: Any,
) -> None:
    words = refusal("restart", HostFacts(sweep_running=True))
    app = app_factory(sweep_running=True)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        footer = app.screen.query_one(PlateauFooter)
        for _ in range(100):  # a loaded machine composes the footer later
            await pilot.pause(0.02)
            plan = footer._plan() or ()
            if plan:
                break
        restart = [p for p in plan if p[3] == BY_ID["restart"].action]
        assert [(disabled, tooltip) for *_, disabled, tooltip in restart] == [(True, words)]
        labels = [label for label, _help, _run in PaletteProvider(app.screen)._entries()]
        assert f"{BY_ID['restart'].description} (unavailable: {words})" in labels
        await pilot.press("r")
        await pilot.pause()
        said = [str(n.message) for n in app._notifications]
        assert said == [f"{BY_ID['restart'].description}: {words}"]


async def test_the_cli_refuses_a_restart_during_a_sweep_in_the_same_words(
    tmp_path: Path,
) -> None:
    """The lease a sweep takes (its purpose "sweep LABEL", console.jobs.sweep), held on the
    host by this process; `plateau server restart` in another process meets it there."""
    words = refusal("restart", HostFacts(sweep_running=True))
    config = write_local_ideal_config(tmp_path / "config.toml", free_port(),
                                      run_dir=tmp_path / "run")
    host = load_config_file(config).config.host("box")
    transport = LocalTransport("box", run_dir=str(tmp_path / "run"))
    try:
        async with host_lease("box").hold("sweep ideal (tiny)", transport=transport, host=host):
            code, text = await asyncio.to_thread(finish, spawn_plateau(
                tmp_path, "--config", str(config), "server", "restart", "box"))
    finally:
        await transport.close()
    assert code == 1, text
    assert f"box is busy: {words}: sweep ideal (tiny)" in text, text
    assert "restart" in text and "refused" in text, text
