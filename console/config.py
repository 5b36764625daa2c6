"""Loading the TOML config: discovery, validation with file/key/line errors, value sources."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import platformdirs

from console.errors import ConfigError
from console.hostsources.origin import HostOrigin, HostSourceError
from console.text import sanitize
from console.tomlfile import TomlFileError, loads_toml, read_toml_text

if TYPE_CHECKING:  # the models (pydantic) come with a config, not with the console's first frame
    from console.config_models import PlateauConfig

ENV_VAR = "PLATEAU_CONFIG"
APP_NAME = "plateau"

_SECRET_WORDS = ("password", "passphrase", "token", "secret", "api-key", "api_key", "apikey")


@dataclass(frozen=True)
class LoadedConfig:
    """The effective config and where it came from (None: built-in defaults)."""

    config: PlateauConfig
    path: Path | None
    text: str = ""
    host_origins: tuple[HostOrigin, ...] = ()
    """Where each of config.hosts came from (same order); empty: all from [[hosts]]."""
    group_keys: dict[tuple[str, str], str] = field(default_factory=dict)
    """'FILE:LINE' of each (group, key) that an inventory's [groups.NAME] sets."""

    def host_source(self, index: int) -> str:
        """'FILE:LINE' of the host's entry (an ssh config one adds its alias)."""
        if index < len(self.host_origins):
            return self.host_origins[index].source
        return self.source_of(("hosts", index, "name"))

    @cached_property
    def _key_lines(self) -> dict[tuple[str | int, ...], int]:
        from console.config_errors import key_lines

        return key_lines(self.text)

    def source_of(self, key_path: tuple[str | int, ...]) -> str:
        """'FILE:LINE' for a value set in the file, else 'default'. One pass over the text
        per config, then a lookup per value: `config show` of 2,000 hosts rescanned the
        whole file for each of its ~30,000 values."""
        if key_path[:1] == ("hosts",) and len(key_path) > 2 and self.host_origins:
            origin = self.host_origins[int(key_path[1])]
            found = origin.where.get(str(key_path[2]))
            if found is not None or origin.kind != "config":
                return found or "default"
        if key_path[:1] == ("groups",) and len(key_path) > 2:
            found = self.group_keys.get((str(key_path[1]), str(key_path[2])))
            if found is not None:
                return found
        if self.path is None:
            return "default"
        from console.config_errors import key_line

        line = key_line(self._key_lines, key_path)
        return f"{self.path}:{line}" if line is not None else "default"


def default_config_path() -> Path:
    return Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml"


def discover_config_path(explicit: str | os.PathLike[str] | None) -> tuple[Path | None, str]:
    """The config path to use and why: --config, then $PLATEAU_CONFIG, then the XDG dir."""
    if explicit:
        return Path(explicit).expanduser(), "--config"
    from_env = os.environ.get(ENV_VAR)
    if from_env:
        return Path(from_env).expanduser(), f"${ENV_VAR}"
    xdg = default_config_path()
    if xdg.is_file():
        return xdg, "XDG config dir"
    return None, "built-in defaults (no config file found)"


def load_config(explicit: str | os.PathLike[str] | None = None) -> LoadedConfig:
    """Find and load the config. An explicitly named file must exist."""
    path, _reason = discover_config_path(explicit)
    if path is None:  # the defaults, as pydantic never validates them
        from console.config_models import PlateauConfig

        return LoadedConfig(PlateauConfig.model_construct(), None)
    return load_config_file(path)


def load_config_file(path: Path) -> LoadedConfig:
    # Host sources (inventories, ~/.ssh/config, groups): read with a config file only, so
    # the console's start-up without one does not import them.
    from console.hostsources.merge import expand_hosts

    try:
        text = read_toml_text(path, what="config file")
    except TomlFileError as exc:
        raise ConfigError(str(exc)) from None
    config = parse_config_text(text, path)
    try:
        config, origins, group_keys = expand_hosts(config, text, path)
    except HostSourceError as exc:
        raise ConfigError(sanitize(str(exc))) from None
    return LoadedConfig(config, path, text, origins, group_keys)


def parse_config_text(text: str, path: Path) -> PlateauConfig:
    from pydantic import ValidationError

    from console.config_models import PlateauConfig

    try:
        data = loads_toml(text, path)
    except TomlFileError as exc:
        raise ConfigError(str(exc)) from None
    try:
        return PlateauConfig.model_validate(data)
    except RecursionError:
        raise ConfigError(f"{path}: values nested too deeply") from None
    except ValidationError as exc:
        from console.config_errors import describe_validation_error

        raise ConfigError(describe_validation_error(exc, text, path, PlateauConfig)) from None


def is_secret_key(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in _SECRET_WORDS)


def redacted(value: Any, key: str = "") -> Any:
    """A copy of `value` with secret-looking entries replaced by '***'."""
    if key and is_secret_key(key) and not key.endswith("_env"):
        return "***"
    if isinstance(value, dict):
        return {k: redacted(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [redacted(v) for v in value]
    return value


def flatten_config(
    value: Any, prefix: str = "", path: tuple[str | int, ...] = ()
) -> list[tuple[str, tuple[str | int, ...], Any]]:
    """Leaf values of a config dump with dotted keys (`config show`, the config screen);
    lists of scalars stay whole."""
    if isinstance(value, dict) and value:
        rows = []
        for key, item in value.items():
            rows += flatten_config(item, f"{prefix}.{key}" if prefix else str(key), (*path, key))
        return rows
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        rows = []
        for index, item in enumerate(value):
            rows += flatten_config(item, f"{prefix}[{index}]", (*path, index))
        return rows
    return [(prefix, path, value)]
