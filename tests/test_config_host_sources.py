"""Hosts from an inventory file and ~/.ssh/config beside [[hosts]]; group defaults; errors
that name file, key and line; `config show` names each host's source. The ssh config is
checked against OpenSSH's own resolution (`ssh -G`)."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
from pathlib import Path

import pytest

from console.config import load_config_file
from console.errors import ConfigError
from tests.test_config import plateau

SSH_CONFIG = """\
Include {include}

Host bastion
    HostName bastion.example.internal
    User jumper
    Port 2200

Host gpu-01 gpu-02
    HostName %h.example.internal
    User ops

Host gpu-03
    HostName gpu-03.example.internal
    Port 2222
    ProxyJump bastion
    IdentityFile ~/.ssh/id_gpu3

Host gpu-*
    User fallback
    IdentityFile ~/.ssh/id_fleet

Host *
    UserKnownHostsFile ~/.ssh/fleet_known_hosts
"""

INCLUDED = "Host gpu-04\n    HostName 10.0.1.4\n"

CONFIG = """\
[profiles.main]
model_path = "org/model"

[groups.h200]
python = "/opt/sglang/bin/python"
run_dir = "/scratch/plateau"
profile = "main"

[ssh_config]
file = "ssh_config"
include = ["gpu-*"]
exclude = ["gpu-02"]
group = "h200"

inventory = "hosts.toml"

[[hosts]]
name = "gpu-01"
local = true
"""

INVENTORY = """\
[[hosts]]
name = "rack-7"
address = "10.0.7.1"
group = "h200"
python = "python3.12"
"""


def _config_text(extra: str = "", body: str = CONFIG) -> str:
    # `inventory` is a top-level key: it must come before the first table.
    return f'inventory = "hosts.toml"\n{extra}' + body.replace('inventory = "hosts.toml"\n', "")


def _write(tmp_path: Path, body: str = CONFIG, extra: str = "") -> Path:
    (tmp_path / "included.conf").write_text(INCLUDED)
    (tmp_path / "ssh_config").write_text(SSH_CONFIG.format(include=tmp_path / "included.conf"))
    if not (tmp_path / "hosts.toml").exists():
        (tmp_path / "hosts.toml").write_text(INVENTORY)
    config = tmp_path / "config.toml"
    config.write_text(_config_text(extra, body))
    return config


def test_hosts_from_every_source_in_order(tmp_path: Path) -> None:
    loaded = load_config_file(_write(tmp_path))
    hosts = {host.name: host for host in loaded.config.hosts}
    # [[hosts]] first, then the inventory, then the ssh aliases; gpu-01 is explicit (wins),
    # gpu-02 excluded, bastion not selected, `gpu-*` and `*` are wildcard blocks (no hosts).
    assert list(hosts) == ["gpu-01", "rack-7", "gpu-04", "gpu-03"]
    assert hosts["gpu-01"].local and hosts["gpu-01"].group is None
    gpu3 = hosts["gpu-03"]
    assert (gpu3.address, gpu3.port, gpu3.user) == ("gpu-03.example.internal", 2222, "fallback")
    assert gpu3.jump_host == "jumper@bastion.example.internal:2200"
    assert gpu3.identity_files == ["~/.ssh/id_gpu3", "~/.ssh/id_fleet"]
    assert gpu3.known_hosts_file == "~/.ssh/fleet_known_hosts"
    assert hosts["gpu-04"].address == "10.0.1.4" and hosts["gpu-04"].port == 22
    # Group defaults fill what the entry left out; the entry's own value wins.
    assert (gpu3.python, gpu3.run_dir, gpu3.profile) == ("/opt/sglang/bin/python",
                                                         "/scratch/plateau", "main")
    assert hosts["rack-7"].python == "python3.12" and hosts["rack-7"].run_dir == "/scratch/plateau"


@pytest.mark.skipif(shutil.which("ssh") is None, reason="needs OpenSSH's ssh client")
def test_ssh_config_resolution_matches_openssh(tmp_path: Path) -> None:
    loaded = load_config_file(_write(tmp_path))
    for host in loaded.config.hosts:
        if host.local or host.name == "rack-7":
            continue
        shown = subprocess.run(["ssh", "-G", "-F", str(tmp_path / "ssh_config"), host.name],
                               capture_output=True, text=True, check=True).stdout
        resolved: dict[str, list[str]] = {}
        for line in shown.splitlines():
            key, _, value = line.partition(" ")
            resolved.setdefault(key, []).append(value)
        assert resolved["hostname"] == [host.address]
        assert resolved["user"] == [host.user]
        assert resolved["port"] == [str(host.port)]
        assert resolved["identityfile"] == host.identity_files
        # ssh -G expands ~ in this one, with the account's home (not $HOME)
        home = pwd.getpwuid(os.getuid()).pw_dir
        assert resolved["userknownhostsfile"][0].split()[0] == \
            str(host.known_hosts_file).replace("~", home, 1)
        # ssh -G prints ProxyJump as written; ours is the hop resolved through the file.
        assert resolved.get("proxyjump", [None]) == (["bastion"] if host.jump_host else [None])


def test_config_show_names_each_hosts_source(tmp_path: Path) -> None:
    config = _write(tmp_path)
    shown = plateau("--config", str(config), "config", "show")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    ssh = tmp_path / "ssh_config"
    assert f"# host gpu-01: {config}:18" in lines
    assert f"# host rack-7: {tmp_path / 'hosts.toml'}:2" in lines
    assert f"# host gpu-03: {ssh}:12 (Host gpu-03)" in lines
    assert f"# host gpu-04: {tmp_path / 'included.conf'}:1 (Host gpu-04)" in lines
    by_key = {line.split(" = ")[0]: line for line in lines if " = " in line}
    assert by_key["hosts[3].port"].endswith(f"# {ssh}:12 (Host gpu-03)")
    assert by_key["hosts[3].python"].endswith(f"# group h200 ({config}:6)")
    assert by_key["hosts[1].python"].endswith(f"# {tmp_path / 'hosts.toml'}:5")
    assert by_key["hosts[3].lease_grace_s"].endswith("# default")
    as_json = json.loads(plateau("--config", str(config), "config", "show", "--json").stdout)
    assert as_json["hosts"][2] == {"name": "gpu-04",
                                   "source": f"{tmp_path / 'included.conf'}:1 (Host gpu-04)"}


@pytest.mark.parametrize(
    ("inventory", "extra", "expected"),
    [
        ('[[hosts]]\nname = "x"\nadress = "h"\n', "",
         "hosts.toml:3: hosts[0].adress: unknown key 'adress' (did you mean 'address'?)"),
        ('[[hosts]]\nname = "gpu-01"\nlocal = true\n', "",
         "hosts.toml:2: hosts[0].name: host 'gpu-01' is also defined at {config}:18"),
        ('[[hosts]]\nname = "x"\nlocal = true\ngroup = "a100"\n', "",
         "hosts.toml:2: hosts[0]: host 'x' names unknown group 'a100' (groups: h200)"),
        ("", 'default_host = "nowhere"\n',
         "config.toml:2: default_host: 'nowhere' is not one of the hosts"),
    ],
)
def test_inventory_errors_name_file_key_line(
    tmp_path: Path, inventory: str, extra: str, expected: str
) -> None:
    (tmp_path / "hosts.toml").write_text(inventory)
    config = _write(tmp_path, extra=extra)
    with pytest.raises(ConfigError) as info:
        load_config_file(config)
    assert str(info.value) == str(tmp_path / expected.format(config=config))
    checked = plateau("config", "check", str(config))
    assert checked.returncode == 2 and checked.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("ssh_text", "expected"),
    [
        ("Host gpu-09\n  ProxyCommand nc %h %p\n",
         "ssh_config:1 (Host gpu-09): ProxyCommand is not supported (ProxyJump is)"),
        ("Host gpu-09\n  Port 99999\n", "ssh_config:1 (Host gpu-09): port:"),
        ("Host gpu-09\n  HostName bad..name\n", "ssh_config:1 (Host gpu-09): address:"),
        ('Host gpu-09\n  HostName "unclosed\n', "ssh_config:2: No closing quotation"),
    ],
)
def test_ssh_config_errors_name_file_and_line(
    tmp_path: Path, ssh_text: str, expected: str
) -> None:
    config = _write(tmp_path)
    (tmp_path / "ssh_config").write_text(ssh_text)
    with pytest.raises(ConfigError) as info:
        load_config_file(config)
    assert str(info.value).startswith(str(tmp_path / expected)), str(info.value)


def test_missing_ssh_config_names_the_config_key(tmp_path: Path) -> None:
    config = _write(tmp_path)
    (tmp_path / "ssh_config").unlink()
    with pytest.raises(ConfigError) as info:
        load_config_file(config)
    assert str(info.value) == (f"{config}:11: ssh_config.file: {tmp_path / 'ssh_config'}: "
                               "no such file")


def test_group_profile_must_exist(tmp_path: Path) -> None:
    config = _write(tmp_path, body=CONFIG.replace('profile = "main"', 'profile = "nope"'))
    with pytest.raises(ConfigError, match="group 'h200' names unknown profile 'nope'"):
        load_config_file(config)
