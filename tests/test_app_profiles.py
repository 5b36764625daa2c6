"""Profiles saved from the flags editor (profiles.d), and the A/B / flags keys' guards."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
from textual.message import Message

from console.app.launch import Launch, build_sessions
from console.app.messages import HostIntent
from console.config import load_config_file
from console.config_models import ServerProfile
from console.session.profiles import (
    ProfileSaveError,
    load_saved_profiles,
    profile_toml,
    save_profile,
    with_saved_profiles,
)
from tests.support.app_fixtures import wait_until

CONFIG = """
[[hosts]]
name = "box"
address = "gpu-box.example"
profile = "base"

[profiles.base]
model_path = "org/Model"
flags = { "tp-size" = 8 }
"""


def _profile(**update: Any) -> ServerProfile:
    base = ServerProfile(
        launch=["/opt/venv/bin/python", "-m", "sglang.launch_server"],
        model_path="org/Model \"quoted\" path",
        port=30001,
        flags={"moe-runner-backend": "cutlass", "tp-size": 8, "mem-fraction-static": 0.85,
               "enable-metrics": True, "disable-radix-cache": False},
        extra_args=["--chunked-prefill-size", "8192"],
        env={"NCCL_P2P_DISABLE": "1", "HF_TOKEN": "hf_secret_value", "MY_API_KEY": "sk-123"},
        api_key_env="SGLANG_API_KEY",
        description="edited ✓",
    )
    return base.model_copy(update=update)


def test_saved_profile_round_trips_without_secrets(tmp_path: Path) -> None:
    profile = _profile()
    path, skipped = save_profile(tmp_path / "profiles.d", "cutlass-tp8", profile)
    assert path == tmp_path / "profiles.d" / "cutlass-tp8.toml"
    text = path.read_text()
    assert "hf_secret_value" not in text and "sk-123" not in text
    assert skipped == ["HF_TOKEN", "MY_API_KEY"]
    assert 'api_key_env = "SGLANG_API_KEY"' in text  # the key by env name only
    data = tomllib.loads(text)
    assert list(data["profiles"]) == ["cutlass-tp8"]
    loaded, problems = load_saved_profiles(tmp_path / "profiles.d")
    assert problems == []
    assert loaded["cutlass-tp8"] == profile.model_copy(update={"env": {"NCCL_P2P_DISABLE": "1"}})


@pytest.mark.parametrize("name", ["../escape", "a b", "x;touch /tmp/p", "", ".hidden", "a/b"])
def test_hostile_profile_names_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(ProfileSaveError):
        save_profile(tmp_path, name, _profile())
    assert list(tmp_path.iterdir()) == []


def test_saved_profiles_join_the_config_at_start(tmp_path: Path) -> None:
    config_path = tmp_path / "config.toml"
    config_path.write_text(CONFIG)
    directory = tmp_path / "profiles.d"
    save_profile(directory, "triton", _profile(env={}))
    save_profile(directory, "base", _profile(env={}))  # the config file's own wins
    (directory / "broken.toml").write_text("[profiles.broken]\nmodel_path = 3\n")
    loaded = load_config_file(config_path)
    launch = Launch(loaded, store_path=tmp_path / "runs.db")
    sessions, active = build_sessions(launch)
    assert active == "box"
    config = launch.loaded.config
    assert set(config.profiles) == {"base", "triton"}
    assert config.profiles["base"].model_path == "org/Model"
    assert sessions[0].config.profiles["triton"].flags["moe-runner-backend"] == "cutlass"
    notes = "\n".join(launch.profile_notes)
    assert "broken.toml: skipped (model_path" in notes
    assert "profile 'base' wins" in notes


def test_one_profile_set_is_shared_by_the_app_and_every_session(tmp_path: Path) -> None:
    """A profile the flags editor keeps reaches every host's session through the one set
    they share: nothing is copied to each, and all see the same config."""
    from console.app.app import PlateauApp

    config_path = tmp_path / "config.toml"
    config_path.write_text(CONFIG + '\n[[hosts]]\nname = "box2"\naddress = "b.example"\n')
    launch = Launch(load_config_file(config_path), store_path=tmp_path / "runs.db")
    sessions, _active = build_sessions(launch)
    app = PlateauApp(launch.loaded, sessions, profiles_dir=tmp_path / "profiles.d")
    assert [s.config for s in sessions] == [app.config] * 2  # nothing added: as loaded
    kept = _profile(env={})
    assert app.add_profile("kept", kept, persist=False)
    assert app.config.profiles["kept"] == kept
    assert all(s.config is app.config for s in sessions)  # one config with the set, shared
    assert app.loaded.config is app.config and app.loaded.path == config_path
    assert set(app.profiles) == {"base", "kept"}


def test_no_config_file_loads_nothing(tmp_path: Path, app_factory: Any) -> None:
    from tests.support.app_fixtures import app_config

    loaded = app_config()
    merged, notes = with_saved_profiles(loaded)
    assert merged is loaded and notes == []


def test_toml_escapes_hostile_values() -> None:
    text = profile_toml("p", _profile(extra_args=['--x', 'a"]\n[evil]'.replace("\n", " ")]))
    data = tomllib.loads(text)
    assert set(data) == {"profiles"}
    assert data["profiles"]["p"]["extra_args"][1] == 'a"] [evil]'


async def test_ab_and_flags_keys_are_guarded(app_factory: Any) -> None:
    """While a sweep runs, A/B is greyed out and refused; flags on a replay (no host) says
    why in the event log instead of failing silently."""
    app = app_factory(sweep_running=True)
    messages: list[Message] = []
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        await pilot.pause()
        assert app.footer_state("ab") == "disabled"
        await pilot.press("a")
        await pilot.pause()
        assert not [m for m in messages if isinstance(m, HostIntent)]
        await pilot.press("f")
        await wait_until(pilot, lambda: any("cannot read the flags of cutlass-moe" in r.message
                                            for r in app.app_events), "the flags note", 5)
