"""[groups.NAME] from the config and from the inventory: one set of names for every host
source. An inventory may define groups of its own (a team keeps its fleet, groups and all, in
one file), but not redefine one of the config's: two definitions of a name are an error naming
both, as two definitions of a host are (merge.py)."""

from __future__ import annotations

from typing import Protocol

from console.config_models import PlateauConfig
from console.hostsources.inventory import Inventory
from console.hostsources.origin import HostSourceError


class KeySource(Protocol):
    """A TOML file's key and table lines: 'FILE:LINE' for messages and `config show`."""

    def where(self, *key: str | int) -> str: ...

    def table(self, *key: str) -> str: ...


def merge_groups(
    config: PlateauConfig, main: KeySource, inventory: Inventory
) -> tuple[PlateauConfig, dict[str, KeySource]]:
    """`config` with the inventory's groups added, and the file that defines each group."""
    owners: dict[str, KeySource] = dict.fromkeys(config.groups, main)
    for name, group in inventory.groups.items():
        if name in config.groups:
            raise HostSourceError(f"{inventory.table('groups', name)}: groups.{name}: group "
                                  f"{name!r} is also defined at {main.table('groups', name)}")
        try:
            config.check_group_refs(name, group)
        except ValueError as exc:
            raise HostSourceError(f"{inventory.where('groups', name, 'profile')}: "
                                  f"groups.{name}.profile: {exc}") from None
        owners[name] = inventory
    merged = {**config.groups, **inventory.groups}
    return config.model_copy(update={"groups": merged}), owners


def check_config_groups(config: PlateauConfig, main: KeySource) -> None:
    """The groups the config's own [[hosts]] and [ssh_config] name exist, once the
    inventory's groups are known (config_models.PlateauConfig defers this check to here)."""
    for index, host in enumerate(config.hosts):
        try:
            config.check_group(host.group, f"host {host.name!r}")
        except ValueError as exc:
            raise HostSourceError(f"{main.where('hosts', index, 'group')}: "
                                  f"hosts[{index}].group: {exc}") from None
    if config.ssh_config is not None:
        try:
            config.check_group(config.ssh_config.group, "ssh_config")
        except ValueError as exc:
            raise HostSourceError(f"{main.where('ssh_config', 'group')}: ssh_config.group: "
                                  f"{exc}") from None
