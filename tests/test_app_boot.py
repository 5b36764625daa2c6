"""A console that draws before its config and sessions exist, then boots (console.app.boot;
issue 42): `plateau demo`'s first frame without pydantic. The boot here is a real one made of
the app's own parts (a config, replay sessions), held back by the test so it can look at the
console before and after it lands."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from console.app.app import PlateauApp
from console.app.boot import Booted, BootPlan, DefaultUi, FirstFrame
from console.config import LoadedConfig, load_config_file
from console.config_models import PlateauConfig, UiConfig
from console.errors import UsageError
from console.session.replay import ReplaySession
from console.session.state import HostState
from tests.support.app_fixtures import app_config, demo_events, fixed_clock, wait_until

pytestmark = pytest.mark.usefixtures("app_factory")

FIRST = FirstFrame(hosts=("demo",), active_host="demo", profile="cutlass-moe")


class HeldBoot:
    """A boot that makes the console's config and replay sessions once `release()` is called
    (or raises `error` then)."""

    def __init__(self, error: Exception | None = None) -> None:
        self.gate = asyncio.Event()
        self.error = error
        self.ran_to_end = False
        self.cancelled = False

    def release(self) -> None:
        self.gate.set()

    async def __call__(self) -> Booted:
        try:
            await self.gate.wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        if self.error is not None:
            raise self.error
        loaded = app_config(["demo"])
        sessions = [ReplaySession.from_events(host, demo_events(host.name), clock=fixed_clock)
                    for host in loaded.config.hosts]
        self.ran_to_end = True
        return Booted(loaded, sessions, "demo")


def booting_app(boot: HeldBoot, first: FirstFrame = FIRST) -> PlateauApp:
    return PlateauApp(None, boot=BootPlan(first, boot), clock=fixed_clock, tick_seconds=None)


def header_text(app: Any) -> str:
    return str(app.screen.query_one("#header").render())


async def test_first_frame_is_drawn_before_the_boot_and_reads_as_the_booted_one() -> None:
    boot = HeldBoot()
    app = booting_app(boot)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert not app.booted
        panels = [p.id for p in app.screen.query(".panel")]
        assert panels == ["gpus", "server", "log", "sweep"]
        first = header_text(app)
        assert "host demo" in first and '"cutlass-moe"' in first and "CONNECTING" in first
        shown = app.screen.query_one("PlateauFooter").shown_keys  # type: ignore[attr-defined]
        assert any(key.description == "Quit" for key in shown)
        before = app.header_info(app.active_state)

        boot.release()
        await wait_until(pilot, lambda: app.booted, "the boot")
        # The booted console's header for a host that has not connected yet: what the first
        # frame drew (the frame is not redrawn into something else).
        assert app.header_info(HostState("demo", clock=fixed_clock)) == before
        # The sessions started with the boot: the replay's log reaches the dashboard.
        await wait_until(pilot, lambda: app.active_state.log_total > 0, "the replayed log")
        assert app.sessions["demo"].state is app.active_state


async def test_keys_pressed_before_the_boot_act_once_it_lands() -> None:
    boot = HeldBoot()
    app = booting_app(boot)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.press("2")  # hide the server panel: held, not refused or lost
        await pilot.pause()
        assert app.screen.query_one("#server").display
        boot.release()
        await wait_until(pilot, lambda: app.booted, "the boot")
        await wait_until(pilot, lambda: not app.screen.query_one("#server").display,
                         "the held key to act")


async def test_quit_before_the_boot_ends_the_console_at_once() -> None:
    boot = HeldBoot()
    app = booting_app(boot)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.press("q")
        await pilot.pause()
    assert not app.booted and not boot.ran_to_end
    assert app.boot_error is None
    assert app.sessions == {}


async def test_a_failed_boot_ends_the_console_with_its_error() -> None:
    boot = HeldBoot(UsageError("no hosts configured"))
    app = booting_app(boot)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        boot.release()
        await wait_until(pilot, lambda: app.boot_error is not None, "the boot to fail")
    assert isinstance(app.boot_error, UsageError)
    assert app.return_code == 1 and not app.booted


async def test_run_booting_console_raises_the_boot_error_after_the_console_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The command's side: the error comes out of `run_booting_console` (the CLI prints it as
    one line), once the terminal is the operator's again; nothing was left to shut down."""
    import textual.app

    from console.app import launch

    run_async = textual.app.App.run_async

    async def headless(self: Any, **kw: Any) -> Any:
        return await run_async(self, headless=True, size=(120, 40), **kw)

    monkeypatch.setattr(textual.app.App, "run_async", headless)

    async def make_launch() -> launch.Launch:
        raise UsageError("--run-dir: not a directory: /etc/hostname")

    with pytest.raises(UsageError, match="not a directory"):
        await launch.run_booting_console(FIRST, make_launch)


def test_the_first_frames_defaults_are_the_configs() -> None:
    """A config without [ui] or a theme boots into what a first frame draws by default."""
    ui, config = DefaultUi(), PlateauConfig()
    for field in dataclasses.fields(DefaultUi):
        assert getattr(ui, field.name) == getattr(UiConfig(), field.name), field.name
    assert FirstFrame(hosts=("h",), active_host="h").theme == config.theme


def test_the_demos_first_frame_is_what_its_boot_makes_of_the_users_config(
    tmp_path: Path,
) -> None:
    """With a config file, `plateau demo` reads it before drawing: the first frame's [ui],
    keymap and theme are the ones the booted demo config takes from it."""
    from console.commands.demo import _first_frame
    from console.demo import DEMO_HOST, demo_profile, temp_demo
    from console.demo_user import demo_with_user

    path = tmp_path / "config.toml"
    path.write_text('theme = "plateau-light"\n[ui]\nascii = true\nlog_max_lines = 5000\n'
                    'gpu_load_mid = 40.0\n[keymap]\nrestart = "ctrl+r"\n', encoding="utf-8")
    user = load_config_file(path)
    first = _first_frame(user)
    demo, _run_dir = temp_demo(run_dir=tmp_path / "run")
    booted, _profiles_dir, _notes = demo_with_user(demo, user)
    assert (first.hosts, first.active_host) == ((DEMO_HOST,), DEMO_HOST)
    assert first.profile == demo_profile(booted)
    for field in dataclasses.fields(DefaultUi):
        assert getattr(first.ui, field.name) == getattr(booted.ui, field.name), field.name
    assert first.ui.ascii and first.ui.log_max_lines == 5000
    assert dict(first.keymap) == dict(booted.keymap) == {"restart": "ctrl+r"}
    assert first.theme == booted.theme == "plateau-light"
    # Without a config file: the defaults, which the booted demo config has too.
    bare = _first_frame(None)
    no_file = LoadedConfig(PlateauConfig.model_construct(), None)  # load_config's, no file
    plain, _profiles_dir, _notes = demo_with_user(demo, no_file)
    assert bare.theme == plain.theme and dict(bare.keymap) == dict(plain.keymap) == {}
    assert bare.ui.ascii == plain.ui.ascii and bare.ui.log_max_lines == plain.ui.log_max_lines



def test_the_first_frame_before_the_boot_snapshot(snap_compare: Any) -> None:
    """What `plateau demo` draws before its boot: the layout, the host connecting, its
    profile named, the keys the refusal policy gives a host that is connecting."""
    app = booting_app(HeldBoot())

    async def run_before(pilot: Any) -> None:
        await pilot.pause()
        assert not pilot.app.booted

    assert snap_compare(app, terminal_size=(160, 48), run_before=run_before)


def test_a_run_dir_that_cannot_be_one_is_a_one_line_error_before_anything_is_drawn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`plateau demo --run-dir FILE` printed a traceback; now the command's one line, before
    the console (or its boot) starts."""
    from console.cli import main

    monkeypatch.delenv("PLATEAU_CONFIG")  # no config file: XDG_CONFIG_HOME is tmp_path
    a_file = tmp_path / "not-a-dir"
    a_file.write_text("x", encoding="utf-8")
    assert main(["demo", "--run-dir", str(a_file)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"plateau: --run-dir {a_file}: File exists"]
