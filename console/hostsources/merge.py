"""All configured hosts in one list: the config's [[hosts]], then the inventory's, then the
ssh config's selected aliases; each then takes its group's defaults (the config's or the
inventory's [groups.NAME], groups.py) for the keys it left out.

A name defined twice in the config and the inventory is an error naming both places; an ssh
alias with the name of an explicit entry is skipped (the explicit entry is the override)."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from console.config_errors import format_key, key_line, key_lines
from console.config_models import HostConfig, HostGroup, PlateauConfig
from console.hostsources.groups import KeySource, check_config_groups, merge_groups
from console.hostsources.inventory import (
    Inventory,
    inventory_path,
    read_inventory,
    table_where,
)
from console.hostsources.origin import HostOrigin, HostSourceError
from console.hostsources.ssh_config import ssh_hosts


class _Main:
    """The config file's own key lines, for messages and sources."""

    def __init__(self, text: str, path: Path | None) -> None:
        self.path = path
        self.text = text
        self.lines = key_lines(text) if path is not None else {}

    def where(self, *key: str | int) -> str:
        line = key_line(self.lines, key)
        return f"{self.path}:{line}" if line is not None else str(self.path or "config")

    def table(self, *key: str) -> str:
        return table_where(self.path, self.text, key)


def expand_hosts(
    config: PlateauConfig, text: str, path: Path | None
) -> tuple[PlateauConfig, tuple[HostOrigin, ...], dict[tuple[str, str], str]]:
    """`config` with every host source read in, each host's origin (same order), and
    'FILE:LINE' of each (group, key) an inventory's [groups.NAME] sets."""
    main = _Main(text, path)
    hosts = list(config.hosts)
    origins = [HostOrigin("config", main.where("hosts", i, "name")) for i in range(len(hosts))]
    owners: dict[str, KeySource] = dict.fromkeys(config.groups, main)
    group_keys: dict[tuple[str, str], str] = {}
    if config.inventory is not None:
        inventory = read_inventory(inventory_path(config.inventory, main.path))
        config, owners = merge_groups(config, main, inventory)
        check_config_groups(config, main)
        group_keys = {(name, key): inventory.where("groups", name, key)
                      for name, group in inventory.groups.items()
                      for key in group.model_fields_set}
        _add_inventory(config, inventory, hosts, origins)
    if config.ssh_config is not None:
        _add_ssh_hosts(config, main, hosts, origins)
    for index, host in enumerate(hosts):
        hosts[index] = _with_group(config, owners, host, origins[index])
    if config.default_host is not None and config.default_host not in {h.name for h in hosts}:
        raise HostSourceError(f"{main.where('default_host')}: default_host: "
                              f"{config.default_host!r} is not one of the hosts")
    if len(hosts) == len(config.hosts):
        return config, tuple(origins), group_keys
    return config.model_copy(update={"hosts": hosts}), tuple(origins), group_keys


def _add_inventory(
    config: PlateauConfig, inventory: Inventory, hosts: list[HostConfig],
    origins: list[HostOrigin]
) -> None:
    known = {host.name: origin.source for host, origin in zip(hosts, origins, strict=True)}
    for index, host in enumerate(inventory.hosts):
        where = inventory.where("hosts", index, "name")
        if host.name in known:
            raise HostSourceError(f"{where}: hosts[{index}].name: host {host.name!r} is also "
                                  f"defined at {known[host.name]}")
        try:
            config.check_host_refs(host)
        except ValueError as exc:
            raise HostSourceError(f"{where}: hosts[{index}]: {exc}") from None
        known[host.name] = where
        hosts.append(host)
        origins.append(HostOrigin("inventory", where, {
            key: inventory.where("hosts", index, key) for key in host.model_fields_set}))


def _add_ssh_hosts(
    config: PlateauConfig, main: _Main, hosts: list[HostConfig], origins: list[HostOrigin]
) -> None:
    source = config.ssh_config
    assert source is not None
    path = inventory_path(source.file, main.path)
    if not path.is_file():
        raise HostSourceError(f"{main.where('ssh_config', 'file')}: ssh_config.file: {path}: "
                              "no such file")
    found = ssh_hosts(path, source.include, source.exclude)
    names = {host.name for host in hosts}
    for entry in found:
        if entry.alias in names:
            continue
        where = f"{entry.path}:{entry.line} (Host {entry.alias})"
        try:
            host = HostConfig.model_validate({**entry.values, "group": source.group})
        except ValidationError as exc:
            error = exc.errors()[0]
            raise HostSourceError(f"{where}: {format_key(tuple(error['loc']))}: "
                                  f"{error['msg'].removeprefix('Value error, ')}") from None
        names.add(host.name)
        hosts.append(host)
        group = {"group": main.where("ssh_config", "group")} if source.group else {}
        origins.append(HostOrigin("ssh_config", where,
                                  {**{key: where for key in entry.values}, **group}))


def _with_group(
    config: PlateauConfig, owners: dict[str, KeySource], host: HostConfig, origin: HostOrigin
) -> HostConfig:
    """The host with its group's values for the keys it did not set itself."""
    if host.group is None:
        return host
    group: HostGroup = config.groups[host.group]
    fill = {key: value for key, value in group.model_dump(exclude_none=True).items()
            if key not in host.model_fields_set}
    owner = owners[host.group]
    for key in fill:
        origin.where[key] = f"group {host.group} ({owner.where('groups', host.group, key)})"
    return host.model_copy(update=fill) if fill else host
