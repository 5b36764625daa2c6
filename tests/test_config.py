"""Config discovery, validation messages (file, key, line), sources and redaction."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from console.config import load_config, parse_config_text
from console.config_errors import locate_key
from console.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


def plateau(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    full_env = {**os.environ, "PLATEAU_CONFIG": "", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "console.cli", *args],
        capture_output=True, text=True, cwd=ROOT, env=full_env, timeout=60,
    )


def test_example_config_is_valid_and_complete() -> None:
    loaded = load_config(ROOT / "config.example.toml")
    config = loaded.config
    assert [h.name for h in config.hosts] == ["gpu-box-1", "workstation"]
    assert config.profiles["cutlass-moe"].flags["moe-runner-backend"] == "cutlass"
    assert config.sweeps["default"].concurrency[-1] == 256
    # every model field appears in the example (documented), except derived/internal ones
    text = (ROOT / "config.example.toml").read_text()
    from console.config_models import HostConfig, ServerProfile, SweepPreset, UiConfig

    undocumented = [
        name
        for model in (HostConfig, ServerProfile, SweepPreset, UiConfig)
        for name in model.model_fields
        if name not in text and name != "sim_state_file"
    ]
    assert undocumented == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[[hosts]]\nname = \"a\"\nadress = \"x\"\n",
         "bad.toml:3: hosts[0].adress: unknown key 'adress' (did you mean 'address'?)"),
        ("theme = \"x\"\n[ui]\ngpu_interval_s = \"fast\"\n",
         "bad.toml:3: ui.gpu_interval_s: Input should be a valid number"),
        ("[[hosts]]\naddress = \"h\"\n", "bad.toml:1: hosts[0].name: missing required key"),
        ("[profiles.p]\nmodel_path = \"m\"\nport = 99999\n", "bad.toml:3: profiles.p.port:"),
        ("[sweeps.s]\nconcurency = [1]\n",
         "bad.toml:2: sweeps.s.concurency: unknown key 'concurency' (did you mean 'concurrency'?)"),
        ("x = [\n", "bad.toml: invalid TOML"),
        ("[[hosts]]\nname = \"a b\"\nlocal = true\n", "bad.toml:2: hosts[0].name: host name"),
    ],
)
def test_malformed_config_names_file_key_line(
    tmp_path: Path, text: str, expected: str
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(text)
    with pytest.raises(ConfigError) as info:
        parse_config_text(text, bad)
    assert str(info.value).startswith(str(tmp_path / expected))
    result = plateau("config", "check", str(bad))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert expected.split(":")[0] in result.stderr


def test_missing_explicit_file_is_clear(tmp_path: Path) -> None:
    result = plateau("--config", str(tmp_path / "nope.toml"), "config", "show")
    assert result.returncode == 2
    assert result.stderr.strip() == f"plateau: {tmp_path / 'nope.toml'}: config file not found"


def test_discovery_order_env_then_flag(tmp_path: Path) -> None:
    from_env = tmp_path / "env.toml"
    from_env.write_text('theme = "plateau-light"\n')
    from_flag = tmp_path / "flag.toml"
    from_flag.write_text('theme = "plateau-contrast"\n')
    shown = plateau("config", "show", "--json", env={"PLATEAU_CONFIG": str(from_env)})
    assert json.loads(shown.stdout)["file"] == str(from_env)
    shown = plateau(
        "--config", str(from_flag), "config", "show", "--json",
        env={"PLATEAU_CONFIG": str(from_env)},
    )
    values = {row["key"]: row for row in json.loads(shown.stdout)["values"]}
    assert values["theme"]["value"] == "plateau-contrast"
    assert values["theme"]["source"] == f"{from_flag}:1"
    assert values["ui.ascii"]["source"] == "default"


def test_show_redacts_secrets(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text(
        "[profiles.p]\nmodel_path = \"m\"\napi_key_env = \"MY_KEY\"\n"
        "[profiles.p.flags]\napi-key = \"sk-very-secret\"\n"
        "[profiles.p.env]\nHF_TOKEN = \"hf_secret\"\nNCCL_P2P_DISABLE = \"1\"\n"
    )
    result = plateau("--config", str(config), "config", "show")
    assert result.returncode == 0
    assert "sk-very-secret" not in result.stdout and "hf_secret" not in result.stdout
    assert 'profiles.p.flags.api-key = "***"' in result.stdout
    assert 'profiles.p.env.NCCL_P2P_DISABLE = "1"' in result.stdout
    assert 'profiles.p.api_key_env = "MY_KEY"' in result.stdout


def test_locate_key_in_arrays_of_tables() -> None:
    text = "[[hosts]]\nname = \"a\"\n\n[[hosts]]\nname = \"b\"\nport = 2\n"
    assert locate_key(text, ("hosts", 1, "port"), exact=True) == 6
    assert locate_key(text, ("hosts", 0, "port"), exact=True) is None
    assert locate_key(text, ("hosts", 0, "name")) == 2


def test_cross_reference_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    text = "[[hosts]]\nname = \"a\"\nlocal = true\nprofile = \"missing\"\n"
    with pytest.raises(ConfigError, match="unknown profile 'missing'"):
        parse_config_text(text, bad)


def test_profile_argv_is_a_list_with_flags() -> None:
    config = load_config(ROOT / "config.example.toml").config
    argv = config.profiles["cutlass-moe"].argv()
    assert argv[:3] == ["python", "-m", "sglang.launch_server"]
    assert argv[argv.index("--moe-runner-backend") + 1] == "cutlass"
    assert "--enable-metrics" in argv and "true" not in argv


def test_cli_help_and_unknown_command() -> None:
    result = plateau("--help")
    assert result.returncode == 0 and "config" in result.stdout
    assert plateau("config", "check", str(ROOT / "config.example.toml")).returncode == 0
