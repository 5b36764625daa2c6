"""An inventory file's [groups.NAME]: usable by every host source like the config's own, and
a name defined in both files is an error naming file, key and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.config import load_config_file
from console.errors import ConfigError
from tests.test_config import plateau

CONFIG = """\
inventory = "hosts.toml"

[profiles.main]
model_path = "org/model"

[groups.h200]
python = "/opt/h200/bin/python"

[ssh_config]
file = "ssh_config"
include = ["gpu-*"]
group = "a100"

[[hosts]]
name = "local-1"
address = "10.0.0.1"
group = "a100"
"""

INVENTORY = """\
[groups.a100]
python = "/opt/a100/bin/python"
run_dir = "/scratch/a100"
profile = "main"

[[hosts]]
name = "rack-7"
address = "10.0.7.1"
group = "a100"
run_dir = "/scratch/rack-7"

[[hosts]]
name = "rack-8"
address = "10.0.8.1"
group = "h200"
"""


def _write(tmp_path: Path, inventory: str = INVENTORY, config: str = CONFIG) -> Path:
    (tmp_path / "ssh_config").write_text("Host gpu-01\n    HostName 10.0.1.1\n")
    (tmp_path / "hosts.toml").write_text(inventory)
    path = tmp_path / "config.toml"
    path.write_text(config)
    return path


def test_inventory_groups_serve_every_host_source(tmp_path: Path) -> None:
    loaded = load_config_file(_write(tmp_path))
    hosts = {host.name: host for host in loaded.config.hosts}
    assert list(hosts) == ["local-1", "rack-7", "rack-8", "gpu-01"]
    for name in ("local-1", "gpu-01"):  # the config's [[hosts]] and [ssh_config] group
        assert (hosts[name].python, hosts[name].run_dir, hosts[name].profile) == \
            ("/opt/a100/bin/python", "/scratch/a100", "main")
    # The entry's own value wins over its group's; a config group serves inventory hosts.
    assert (hosts["rack-7"].python, hosts["rack-7"].run_dir) == ("/opt/a100/bin/python",
                                                                 "/scratch/rack-7")
    assert hosts["rack-8"].python == "/opt/h200/bin/python"
    inventory = tmp_path / "hosts.toml"
    shown = plateau("--config", str(_write(tmp_path)), "config", "show")
    assert shown.returncode == 0, shown.stderr
    by_key = {line.split(" = ")[0]: line for line in shown.stdout.splitlines() if " = " in line}
    assert by_key["hosts[0].python"].endswith(f"# group a100 ({inventory}:2)")
    assert by_key["hosts[2].python"].endswith(f"# group h200 ({tmp_path / 'config.toml'}:7)")
    assert by_key["groups.a100.run_dir"].endswith(f"# {inventory}:3")


@pytest.mark.parametrize(
    ("inventory", "config", "expected"),
    [
        ('[[hosts]]\nname = "x"\nlocal = true\n\n[groups.h200]\nrun_dir = "/s"\n', CONFIG,
         "hosts.toml:5: groups.h200: group 'h200' is also defined at {config}:6"),
        ('[groups.b200]\nprofile = "nope"\n', CONFIG.replace('"a100"', '"b200"'),
         "hosts.toml:2: groups.b200.profile: group 'b200' names unknown profile 'nope'"),
        ('[groups.b200]\nrun_dir = "/s"\n', CONFIG,
         "config.toml:17: hosts[0].group: host 'local-1' names unknown group 'a100' "
         "(groups: b200, h200)"),
        ('[groups.a100]\n', CONFIG.replace('group = "a100"\n\n', 'group = "b200"\n\n'),
         "config.toml:12: ssh_config.group: ssh_config names unknown group 'b200' "
         "(groups: a100, h200)"),
        ('[groups."a\\u001b"]\n', CONFIG, "hosts.toml: groups: group name 'a\\x1b' must not"),
        ('[groups.a100]\npyhton = "p"\n', CONFIG,
         "hosts.toml:2: groups.a100.pyhton: unknown key 'pyhton' (did you mean 'python'?)"),
    ],
)
def test_inventory_group_errors_name_file_key_line(
    tmp_path: Path, inventory: str, config: str, expected: str
) -> None:
    path = _write(tmp_path, inventory, config)
    with pytest.raises(ConfigError) as info:
        load_config_file(path)
    assert str(info.value).startswith(str(tmp_path / expected.format(config=path))), \
        str(info.value)
    checked = plateau("config", "check", str(path))
    assert checked.returncode == 2 and checked.stderr.count("\n") == 1
