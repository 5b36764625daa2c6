"""`plateau demo` respects the user's config ([ui] ascii, presets, keymap, theme) and keeps the
profiles saved in a demo between runs (issue 17, item 6)."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.config import load_config
from console.demo import temp_demo
from console.demo_user import demo_with_user
from console.session.profiles import save_profile

USER_CONFIG = """\
theme = "plateau-light"

[ui]
ascii = true

[keymap]
sweep = "w"

[sweeps.tiny]
concurrency = [1, 2]
input_len = 16
output_len = 8
prompts_per_concurrency = 1
"""


@pytest.fixture
def user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "config" / "config.toml"
    path.parent.mkdir()
    path.write_text(USER_CONFIG)
    monkeypatch.setenv("PLATEAU_CONFIG", str(path))
    return path


def test_demo_takes_the_users_ui_keymap_presets_and_theme(user_config: Path,
                                                          tmp_path: Path) -> None:
    demo, _run_dir = temp_demo(1, 0.0, tmp_path / "run1")
    config, profiles_dir, notes = demo_with_user(demo, load_config(None))
    assert config.ui.ascii is True and config.keymap == {"sweep": "w"}
    assert config.theme == "plateau-light"
    assert set(config.sweeps) == {"default", "quick", "tiny"}
    assert profiles_dir == user_config.parent / "profiles.d"  # not the run's temp dir
    assert notes == []


def test_profiles_saved_in_a_demo_come_back_on_this_runs_port(user_config: Path,
                                                              tmp_path: Path) -> None:
    first, _run1 = temp_demo(1, 0.0, tmp_path / "run1")
    config1, profiles_dir, _ = demo_with_user(first, load_config(None))
    edited = config1.profiles["cutlass-moe"].model_copy(
        update={"flags": {**config1.profiles["cutlass-moe"].flags, "moe-runner-backend": "triton",
                          "mem-fraction-static": 0.8}})
    save_profile(profiles_dir, "cutlass-moe-2", edited)  # what the flags editor writes

    second, run2 = temp_demo(2, 0.0, tmp_path / "run2")
    config2, _, _ = demo_with_user(second, load_config(None))
    back = config2.profiles["cutlass-moe-2"]
    assert back.flags["moe-runner-backend"] == "triton" and back.flags["mem-fraction-static"] == 0.8
    assert back.port == config2.profiles["cutlass-moe"].port  # this run's server port
    assert back.flags["sim-state-file"] == str(run2 / "gpu-state.json")  # not run1's folder
    assert back.flags["sim-seed"] == 2


def test_real_host_profiles_stay_out_of_the_demo(user_config: Path, tmp_path: Path) -> None:
    demo, _ = temp_demo(None, 0.0, tmp_path / "run")
    config, profiles_dir, _ = demo_with_user(demo, load_config(None))
    real = config.profiles["cutlass-moe"].model_copy(
        update={"launch": ["/opt/venv/bin/python", "-m", "sglang.launch_server"]})
    save_profile(profiles_dir, "gpu-box", real)
    again, _, _ = demo_with_user(demo, load_config(None))
    assert "gpu-box" not in again.profiles
