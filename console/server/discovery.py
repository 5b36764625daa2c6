"""Discovering a host's flag schema from its own `--help`, cached per host, version and command.

Running `--help` imports SGLang (torch, triton): seconds on a real box. The cache key is the
host, the SGLang version and a hash of the launch command, so upgrading SGLang (or pointing
the profile at another venv) re-discovers instead of trusting stale choices.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import platformdirs

from console.config_models import HostConfig, ServerProfile
from console.engines import engine_of_profile
from console.errors import PlateauError
from console.host.transport import Transport
from console.server.flags import FlagSchema, parse_help
from console.server.flags_click import parse_click_help
from console.server.known import TYPE_HINTS
from console.text import sanitize

APP_NAME = "plateau"
HELP_TIMEOUT_S = 180.0

# Reads an installed distribution's version without importing it (sglang and transformers
# import torch); the distribution's name is argv[1], a value, never code.
_VERSION_SOURCE = (
    "import importlib.metadata as m, sys\n"
    "try:\n    print(m.version(sys.argv[1]))\n"
    "except m.PackageNotFoundError:\n    print('')\n"
)


class DiscoveryError(PlateauError):
    """`--help` could not be run or parsed on the host."""


def default_cache_dir() -> Path:
    return Path(platformdirs.user_cache_dir(APP_NAME)) / "flags"


def python_for(profile: ServerProfile, host: HostConfig) -> str:
    """The interpreter of the server's environment: the launch's own python when it is one."""
    program = profile.launch[0]
    if os.path.basename(program).startswith("python"):
        return program
    return host.python


async def package_version(transport: Transport, python: str, dist: str | None) -> str | None:
    """The version of distribution `dist` in the server's environment (None: not installed,
    or the engine has no distribution to ask)."""
    if dist is None:
        return None
    result = await transport.run([python, "-c", _VERSION_SOURCE, dist], timeout=60.0)
    version = result.stdout.strip() if result.ok else ""
    return sanitize(version)[:64] or None



def cache_key(host_name: str, version: str | None, launch: list[str]) -> str:
    digest = hashlib.sha256(json.dumps(launch).encode()).hexdigest()[:12]
    safe_host = "".join(c if c.isalnum() or c in "._-" else "_" for c in host_name)
    return f"{safe_host}-{version or 'unknown'}-{digest}"


class FlagDiscovery:
    """`schema_for(profile)`: from cache, else from the host's `<launch> --help`."""

    def __init__(
        self,
        transport: Transport,
        host: HostConfig,
        *,
        cache_dir: Path | None = None,
    ) -> None:
        self.transport = transport
        self.host = host
        self.cache_dir = cache_dir or default_cache_dir()
        self._memory: dict[str, FlagSchema] = {}

    async def schema_for(self, profile: ServerProfile, *, refresh: bool = False) -> FlagSchema:
        engine = engine_of_profile(profile)
        version = await package_version(self.transport, python_for(profile, self.host),
                                        engine.dist_name)
        key = cache_key(self.host.name, version, list(profile.launch))
        if not refresh:
            cached = self._memory.get(key) or self._load(key)
            if cached is not None:
                self._memory[key] = cached
                return cached
        schema = await self._discover(profile, version)
        self._memory[key] = schema
        self._store(key, schema)
        return schema

    async def _discover(self, profile: ServerProfile, version: str | None) -> FlagSchema:
        # COLUMNS keeps argparse's layout stable; choices are never wrapped whatever the width.
        env = {"COLUMNS": "100"}
        result = await self.transport.run(
            [*profile.launch, "--help"], timeout=HELP_TIMEOUT_S, env=env
        )
        text = result.stdout
        if not result.ok or "--" not in text:
            tail = sanitize((result.stderr or result.stdout).strip()[-400:])
            raise DiscoveryError(
                f"`{' '.join(profile.launch)} --help` failed on {self.host.name} "
                f"(exit {result.exit_status}): {tail}"
            )
        parse = parse_click_help if engine_of_profile(profile).help_format == "click" \
            else parse_help
        schemas = [parse(text, version=version)]
        # Plateau's simulator keeps its own `--sim-*` options out of SGLang's help (so the
        # SGLang part stays byte-for-byte the real one); they are listed by `--sim-help`.
        if "console.sim" in profile.launch and "sim-startup-seconds" not in schemas[0].flags:
            extra = await self.transport.run([*profile.launch, "--sim-help"], timeout=60.0, env=env)
            if extra.ok:
                schemas.append(parse_help(extra.stdout, version=version))
        merged = schemas[0]
        for other in schemas[1:]:
            merged = merged.model_copy(update={"flags": {**other.flags, **merged.flags}})
        if not merged.flags:
            raise DiscoveryError(f"no options found in `{' '.join(profile.launch)} --help`")
        return merged.with_hints(TYPE_HINTS)

    def _path(self, key: str) -> Path:
        return self.cache_dir / f"{key}.json"

    def _load(self, key: str) -> FlagSchema | None:
        try:
            return FlagSchema.model_validate_json(self._path(key).read_text())
        except (OSError, ValueError):
            return None

    def _store(self, key: str, schema: FlagSchema) -> None:
        try:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            tmp = self._path(key).with_suffix(".tmp")
            tmp.write_text(schema.model_dump_json())
            tmp.replace(self._path(key))
        except OSError:
            pass  # a cache we cannot write only costs time
