"""The console meets an unknown or changed host key on a real sshd: the question, the
decision, what lands in known_hosts, what the event log says."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from textual.message import Message
from textual.widgets import Button

from console.app.messages import HostKeyDecided
from console.app.screens.modals import HostKeyScreen
from console.app.screenshot import export_text
from console.config_models import HostConfig
from console.session.events import HostKeyUnknown
from tests.support.app_fixtures import wait_until
from tests.support.sshd import Sshd
from tests.test_host_keys import host_fingerprint, other_key_line

pytestmark = pytest.mark.sshd


def _host(sshd: Sshd, known_hosts: Path) -> HostConfig:
    return HostConfig(
        name="app-keys", address="127.0.0.1", port=sshd.port, user=sshd.user,
        identity_files=[str(sshd.client_key)], known_hosts_file=str(known_hosts),
        python=sys.executable,
    )


def _host_key_events(app: Any) -> list[str]:
    return [f"{r.level}: {r.message}" for r in app.all_events() if r.source == "host-key"]


async def _asked(pilot: Any) -> HostKeyScreen:
    app = pilot.app
    await wait_until(pilot, lambda: isinstance(app.screen, HostKeyScreen), "the host key question",
                     60)
    await pilot.pause()
    return app.screen  # type: ignore[no-any-return]


async def test_unknown_key_asked_and_refused(live_console: Any, sshd: Sshd, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    live = live_console(_host(sshd, known), launch=False)
    app, state = live.app, live.session.state
    messages: list[Message] = []
    async with app.run_test(size=(140, 44), message_hook=messages.append) as pilot:
        screen = await _asked(pilot)
        fingerprint = host_fingerprint(sshd)
        assert screen.key.fingerprint == fingerprint
        shown = export_text(app)
        for fact in (fingerprint, "127.0.0.1", f"port         {sshd.port}", "ssh-ed25519",
                     str(known)):
            assert fact in shown, fact
        assert app.focused is screen.query_one("#hostkey-refuse-button", Button)
        await pilot.press("n")
        await wait_until(pilot, lambda: not isinstance(app.screen, HostKeyScreen), "closed")
        await wait_until(pilot, lambda: any("refused" in e for e in _host_key_events(app)),
                         "the refusal in the event log")
        await pilot.pause(0.5)  # nothing reconnects behind the operator's back
        assert state.connection == "failed" and live.session.transport is None
        assert state.gpu_sample is None
        assert not known.exists()
        assert [(m.host, m.fingerprint, m.accept) for m in messages
                if isinstance(m, HostKeyDecided)] == [("app-keys", fingerprint, False)]
        # the palette still offers to review it; asking again shows the same key
        app.ask_host_key("app-keys")
        again = await _asked(pilot)
        assert again.key.fingerprint == fingerprint
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, HostKeyScreen), "closed")
    assert not known.exists()


async def test_unknown_key_accepted(live_console: Any, sshd: Sshd, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    live = live_console(_host(sshd, known), launch=False)
    app, state = live.app, live.session.state
    async with app.run_test(size=(140, 44)) as pilot:
        await _asked(pilot)
        await pilot.press("y")
        await wait_until(pilot, lambda: state.connection == "connected", "connected", 60)
        assert f"[127.0.0.1]:{sshd.port} ssh-ed25519 " in known.read_text()
        await wait_until(pilot, lambda: state.gpu_sample is not None
                         and len(state.gpu_sample.gpus) > 0, "GPU rows", 60)
        await wait_until(pilot, lambda: state.server_state == "stopped", "the server state", 60)
        await wait_until(pilot, lambda: "RTX PRO" in export_text(app), "GPU rows drawn", 60)
        events = _host_key_events(app)
        assert any(e.startswith("info: accepting ssh-ed25519") for e in events), events
        assert any("accepted and saved to" in e for e in events), events
        assert state.host_key is None


async def test_changed_key_is_an_error_without_question(
    live_console: Any, sshd: Sshd, tmp_path: Path
) -> None:
    known = tmp_path / "known_hosts"
    pinned = other_key_line(sshd)
    known.write_text(pinned)
    live = live_console(_host(sshd, known), launch=False)
    app, state = live.app, live.session.state
    async with app.run_test(size=(140, 44)) as pilot:
        await wait_until(pilot, lambda: any("HOST KEY CHANGED" in e
                                            for e in _host_key_events(app)), "the error", 60)
        await pilot.pause(0.3)
        assert not any(isinstance(s, HostKeyScreen) for s in app.screen_stack)
        assert state.connection == "failed" and state.host_key is None
        assert _host_key_events(app)[0].startswith("error: HOST KEY CHANGED")
        notes = [n for n in app._notifications if "HOST KEY CHANGED" in n.message]
        assert notes and notes[0].severity == "error"
        app.ask_host_key("app-keys")  # nothing to accept: no question
        await pilot.pause()
        assert not isinstance(app.screen, HostKeyScreen)
    assert known.read_text() == pinned


# -- hermetic: a replayed session ---------------------------------------------------------------

REPLAYED_KEY = HostKeyUnknown(
    "demo", "gpu-box-1.example", 22, "ssh-ed25519",
    "SHA256:z31JmA81m3awf1s9W8UR/cNkPfSx2MKGgCrxjv1KE3E", "/home/op/.ssh/known_hosts",
)


async def _ask(pilot: Any) -> None:
    await pilot.pause()
    pilot.app.sessions["demo"].feed(REPLAYED_KEY)
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, HostKeyScreen), "question", 5)
    await pilot.pause()


@pytest.mark.parametrize(("keys", "command"), [
    (["enter"], "refuse-host-key"),  # the focus is on Refuse: a stray enter trusts nothing
    (["escape"], "refuse-host-key"),
    (["y"], "accept-host-key"),
])
async def test_decision_keys(app_factory: Any, keys: list[str], command: str) -> None:
    app = app_factory(screen="events")
    async with app.run_test(size=(120, 40)) as pilot:
        await _ask(pilot)
        await pilot.press(*keys)
        await wait_until(pilot, lambda: app.sessions["demo"].commands, "the decision", 5)
        assert app.sessions["demo"].commands == [(command, None if "refuse" in command
                                                  else REPLAYED_KEY.fingerprint)]
        assert not isinstance(app.screen, HostKeyScreen)


def test_question_snapshot(snap_compare: Any, app_factory: Any) -> None:
    """Over the events screen (its log shows the unknown key line behind the question)."""
    assert snap_compare(app_factory(screen="events"), terminal_size=(120, 40), run_before=_ask)
