"""`Include` inside a `Host` or `Match` block: its aliases are hosts only where the block
applies to them, as OpenSSH reads it (readconf.c, `case oInclude:`), checked against `ssh -G`."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from console.config import load_config_file

MAIN = """\
Host bastion
    HostName 10.0.0.1
    Include {dir}/bastion_only.conf
Host gpu-*
    Include {dir}/gpu_only.conf
Match host rack-*
    Include {dir}/racks.conf
Host *
    Include {dir}/everyone.conf
Host other-17
    HostName 10.0.0.17
"""

INCLUDED = {
    # Read only while resolving `bastion`: gpu-10 and other-17 are no hosts of their own here.
    "bastion_only.conf": "Host gpu-10 other-17\n    HostName 10.9.9.10\n",
    # Read for gpu-* aliases: gpu-11 is a host, cpu-12 is not.
    "gpu_only.conf": "Host gpu-11 cpu-12\n    HostName 10.0.0.11\n",
    # Read for rack-* (a Match): rack-13 is a host, gpu-14 is not.
    "racks.conf": "Host rack-13 gpu-14\n    HostName 10.0.0.13\n",
    # Read for every host.
    "everyone.conf": "Host db-15\n    HostName 10.0.0.15\n",
}
ALIASES = ["bastion", "gpu-10", "other-17", "gpu-11", "cpu-12", "rack-13", "gpu-14", "db-15"]


def _write(tmp_path: Path) -> Path:
    for name, text in INCLUDED.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "ssh_config").write_text(MAIN.format(dir=tmp_path))
    config = tmp_path / "config.toml"
    config.write_text('[ssh_config]\nfile = "ssh_config"\ninclude = ["*"]\n')
    return config


def test_included_aliases_are_hosts_only_where_their_block_applies(tmp_path: Path) -> None:
    loaded = load_config_file(_write(tmp_path))
    hosts = {host.name: host.address for host in loaded.config.hosts}
    assert hosts == {"bastion": "10.0.0.1", "gpu-11": "10.0.0.11", "rack-13": "10.0.0.13",
                     "db-15": "10.0.0.15", "other-17": "10.0.0.17"}
    # other-17 is named first in bastion_only.conf, where its block never applies to it:
    # its source is the Host line that does.
    sources = dict(zip((h.name for h in loaded.config.hosts), loaded.host_origins, strict=True))
    assert sources["other-17"].source == f"{tmp_path / 'ssh_config'}:10 (Host other-17)"


@pytest.mark.skipif(shutil.which("ssh") is None, reason="needs OpenSSH's ssh client")
def test_included_aliases_agree_with_openssh(tmp_path: Path) -> None:
    loaded = load_config_file(_write(tmp_path))
    hosts = {host.name: host.address for host in loaded.config.hosts}
    for alias in ALIASES:
        shown = subprocess.run(["ssh", "-G", "-F", str(tmp_path / "ssh_config"), alias],
                               capture_output=True, text=True, check=True).stdout
        hostname = next(line.split()[1] for line in shown.splitlines()
                        if line.startswith("hostname "))
        # Every block sets HostName: ssh connects to the alias itself only where none applied.
        assert (alias in hosts) == (hostname != alias), (alias, hostname)
        assert hosts.get(alias, alias) == hostname
