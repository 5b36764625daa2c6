"""The inventory file: `inventory = "hosts.toml"` in the config names a TOML file of
[[hosts]] entries and [groups.NAME] tables, the same keys as the config's own.

Why TOML and not an Ansible-style INI list: one parser and one error path (file, key, line,
"did you mean"), the same validation of every key, and an entry moves between the config and
the inventory unchanged. An INI inventory's own semantics (ansible_* variables, host ranges,
child groups) would be half-understood here, which is worse than not at all."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from pydantic import ValidationError

from console.config_errors import describe_validation_error, key_line, key_lines, locate_key
from console.config_models import HostConfig, HostGroup, InventoryFile
from console.hostsources.origin import HostSourceError
from console.tomlfile import TomlFileError, loads_toml, read_toml_text


@dataclass(frozen=True)
class Inventory:
    path: Path
    hosts: list[HostConfig]
    groups: dict[str, HostGroup]
    text: str

    @cached_property
    def lines(self) -> dict[tuple[str | int, ...], int]:
        """The line of each key (("hosts", 2, "name") -> 14)."""
        return key_lines(self.text)

    def where(self, *key: str | int) -> str:
        line = key_line(self.lines, key)
        return f"{self.path}:{line}" if line is not None else str(self.path)

    def table(self, *key: str) -> str:
        """'FILE:LINE' of a table's header ([groups.h200])."""
        return table_where(self.path, self.text, key)


def table_where(path: Path | None, text: str, key: tuple[str, ...]) -> str:
    line = locate_key(text, key, exact=True)
    return f"{path}:{line}" if line is not None else str(path or "config")


def inventory_path(value: str, config_path: Path | None) -> Path:
    """A relative inventory path is relative to the config file's directory."""
    path = Path(value).expanduser()
    if not path.is_absolute() and config_path is not None:
        path = config_path.parent / path
    return path


def read_inventory(path: Path) -> Inventory:
    try:
        text = read_toml_text(path, what="inventory file")
        data = loads_toml(text, path)
    except TomlFileError as exc:
        raise HostSourceError(str(exc)) from None
    try:
        parsed = InventoryFile.model_validate(data)
    except RecursionError:
        raise HostSourceError(f"{path}: values nested too deeply") from None
    except ValidationError as exc:
        raise HostSourceError(describe_validation_error(exc, text, path, InventoryFile)) from None
    return Inventory(path, list(parsed.hosts), dict(parsed.groups), text)
