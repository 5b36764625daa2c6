"""Bad input from the operator's own files and the host, each one clear line and no traceback:
host name labels, oversize paths, a full disk under a recording, an impossible sim port, and a
host `python` that answers with JSON of its own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from console.cli import main
from console.host.local import LocalTransport
from console.server.hostscript import HostScriptError, run_host_script


def _config_error(tmp_path: Path, body: str, capsys: pytest.CaptureFixture[str]) -> str:
    config = tmp_path / "c.toml"
    config.write_text(body)
    code = main(["--config", str(config), "config", "check"])
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err and err.count("\n") == 1, err
    assert err.startswith(f"plateau: {config}:"), err
    return err


@pytest.mark.parametrize(("address", "says"), [
    ("gpu..example.com", "label ''"),
    ("a" * 64 + ".example.com", "is not 1-63"),
    ("-bad.example.com", "is not 1-63"),
    ("x" * 300, "at most 253"),
])
def test_host_name_labels_are_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      address: str, says: str) -> None:
    err = _config_error(tmp_path, f'[[hosts]]\nname = "x"\naddress = "{address}"\n', capsys)
    assert "hosts[0].address" in err and says in err and len(err) < 300, err


@pytest.mark.parametrize("address", ["gpu-box.example.com", "10.0.0.7", "[::1]", "my_alias"])
def test_ordinary_addresses_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                 address: str) -> None:
    config = tmp_path / "c.toml"
    config.write_text(f'[[hosts]]\nname = "x"\naddress = "{address}"\n')
    assert main(["--config", str(config), "config", "check"]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("key", ["run_dir", "python"])
def test_a_300kb_path_is_refused_without_echoing_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str) -> None:
    err = _config_error(
        tmp_path, f'[[hosts]]\nname = "x"\nlocal = true\n{key} = "{"a" * 300_000}"\n', capsys)
    assert f"hosts[0].{key}" in err and "at most 4096" in err and len(err) < 300


def test_profile_paths_are_bounded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = f'[profiles.p]\nmodel_path = "m"\nlog_dir = "{"d" * 300_000}"\n'
    err = _config_error(tmp_path, body, capsys)
    assert "log_dir" in err and len(err) < 300


def test_sim_port_out_of_range_is_one_line() -> None:
    result = subprocess.run([sys.executable, "-m", "console.sim", "--model-path", "m",
                             "--port", "99999"], capture_output=True, text=True, timeout=120)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "--port 99999 is not a TCP port" in result.stderr


def test_record_to_a_full_disk_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    if not Path("/dev/full").exists():
        pytest.fail("/dev/full is part of every Linux system this suite runs on")
    code = main(["record", "--demo", "--out", "/dev/full", "--seconds", "1"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err, err
    assert "cannot write the recording /dev/full" in err and err.count("\n") == 1


async def test_a_python_that_prints_other_json_is_named(tmp_path: Path) -> None:
    fake = tmp_path / "python"
    fake.write_text('#!/bin/sh\necho \'{"hello": "from a wrapper"}\'\n')
    fake.chmod(0o755)
    transport = LocalTransport("fake")
    await transport.connect()
    try:
        with pytest.raises(HostScriptError, match="answered without path, exists, text: is `"):
            await run_host_script(transport, str(fake), "read", {"path": "/etc/hostname"})
    finally:
        await transport.close()
