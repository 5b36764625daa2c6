"""Launch profiles the operator saved from the console: `<config dir>/profiles.d/<name>.toml`.

Each file holds one `[profiles.<name>]` table in the config's own format, so it can be moved
into the main config by hand. Saved profiles are merged into the config's profiles at start;
a profile of the same name in the config file wins (and that is said). Runs without a config
file (the demo) save to the default config dir but load nothing. Secrets are never
written: API keys are referenced by environment-variable name only (`api_key_env`), and env
entries whose name looks secret are left out of the file (the caller is told which).
"""

from __future__ import annotations

import dataclasses
import json
import re
import tomllib
from pathlib import Path

from pydantic import ValidationError

from console.config import LoadedConfig, default_config_path, is_secret_key
from console.config_models import FlagValue, ServerProfile
from console.text import sanitize
from console.tomlfile import loads_toml, read_toml_text

PROFILES_DIR = "profiles.d"
_SECRET_ENV = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class ProfileSaveError(ValueError):
    """The profile cannot be saved (bad name, unwritable directory)."""


def profiles_dir(loaded: LoadedConfig) -> Path:
    """`profiles.d` beside the config file (or in the default config dir without one)."""
    base = loaded.path.parent if loaded.path is not None else default_config_path().parent
    return base / PROFILES_DIR


def name_problem(name: str) -> str | None:
    """Why the save refuses `name` (it is a file name), or None."""
    if _NAME.match(name):
        return None
    return f"profile name {name!r}: use letters, digits, '.', '_' and '-' (max 64)"


def check_name(name: str) -> str:
    problem = name_problem(name)
    if problem is not None:
        raise ProfileSaveError(problem)
    return name


def name_stem(name: str) -> str:
    """`name` as the start of a saveable name, room left for a `-NN` suffix: a Why A/B's
    run-only "cutlass-moe+cuda-graph-ceiling" gives "cutlass-moe-cuda-graph-ceiling"."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", name).lstrip("._-")[:60].rstrip("-")
    return stem or "profile"


def secret_env_names(profile: ServerProfile) -> list[str]:
    return sorted(n for n in profile.env if is_secret_key(n) or _SECRET_ENV.search(n))


def _value(value: FlagValue | str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def _key(name: str) -> str:
    return json.dumps(name)


EDITOR_COMMENT = "Saved from the Plateau console's flags editor."


def profile_toml(name: str, profile: ServerProfile, comment: str = EDITOR_COMMENT) -> str:
    """The `[profiles.<name>]` table (secret-looking env entries left out) under `comment`
    (where it came from: one line, made so)."""
    secret = set(secret_env_names(profile))
    head = f"profiles.{_key(name)}"
    lines = [f"# {' '.join(sanitize(comment).split())}", f"[{head}]"]
    lines.append(f"launch = [{', '.join(json.dumps(a) for a in profile.launch)}]")
    lines.append(f"model_path = {_value(profile.model_path)}")
    lines.append(f"host = {_value(profile.host)}")
    lines.append(f"port = {profile.port}")
    if profile.extra_args:
        lines.append(f"extra_args = [{', '.join(json.dumps(a) for a in profile.extra_args)}]")
    if profile.log_dir is not None:
        lines.append(f"log_dir = {_value(profile.log_dir)}")
    if profile.api_key_env is not None:
        lines.append(f"api_key_env = {_value(profile.api_key_env)}")
    if profile.description:
        lines.append(f"description = {_value(profile.description)}")
    if profile.flags:
        lines += ["", f"[{head}.flags]"]
        lines += [f"{_key(k)} = {_value(v)}" for k, v in profile.flags.items()]
    env = {k: v for k, v in profile.env.items() if k not in secret}
    if env:
        lines += ["", f"[{head}.env]"]
        lines += [f"{_key(k)} = {_value(v)}" for k, v in env.items()]
    return "\n".join(lines) + "\n"


def save_profile(directory: Path, name: str, profile: ServerProfile,
                 comment: str = EDITOR_COMMENT) -> tuple[Path, list[str]]:
    """Write `<directory>/<name>.toml` atomically under `comment`; returns (path, env names
    left out)."""
    check_name(name)
    text = profile_toml(name, profile, comment)
    # Read it back before writing: what we write must load as the same profile.
    parsed = _parse(text, name, Path(f"{name}.toml"))
    skipped = secret_env_names(profile)
    expected = profile.model_copy(
        update={"env": {k: v for k, v in profile.env.items() if k not in skipped}}
    )
    if parsed != expected:
        raise ProfileSaveError(f"profile {name!r} did not survive a TOML round trip")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{name}.toml"
        tmp = path.with_suffix(".toml.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        raise ProfileSaveError(f"cannot write {directory}: {exc}") from None
    return path, skipped


def _parse(text: str, name: str, path: Path) -> ServerProfile:
    data = loads_toml(text, path)
    table = data.get("profiles", {})
    if set(table) != {name}:
        raise ValueError(f"expected one table [profiles.{name}]")
    return ServerProfile.model_validate(table[name])


def load_saved_profiles(directory: Path) -> tuple[dict[str, ServerProfile], list[str]]:
    """Every valid `<name>.toml` of `directory`; problems as one line each (file: why)."""
    found: dict[str, ServerProfile] = {}
    problems: list[str] = []
    if not directory.is_dir():
        return found, problems
    for path in sorted(directory.glob("*.toml")):
        name = path.stem
        try:
            check_name(name)
            found[name] = _parse(read_toml_text(path, what="saved profile"), name, path)
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, ValueError) as exc:
            why = _why(exc, path)
            problems.append(f"{path}: skipped ({why})")
    return found, problems


def _why(exc: Exception, path: Path) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        return f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
    return str(exc).removeprefix(f"{path}: ").splitlines()[0]


def with_saved_profiles(
    loaded: LoadedConfig, directory: Path | None = None
) -> tuple[LoadedConfig, list[str]]:
    """`loaded` with the saved profiles added; (new LoadedConfig, notes). Without a config
    file (the demo, snapshots) nothing is loaded, so those runs stay reproducible."""
    if directory is None and loaded.path is None:
        return loaded, []
    directory = directory or profiles_dir(loaded)
    saved, notes = load_saved_profiles(directory)
    config = loaded.config
    clashes = sorted(set(saved) & set(config.profiles))
    for name in clashes:
        notes.append(f"{directory / (name + '.toml')}: the config file's profile {name!r} wins")
    added = {k: v for k, v in saved.items() if k not in config.profiles}
    if not added:
        return loaded, notes
    merged = config.model_copy(update={"profiles": {**config.profiles, **added}})
    return dataclasses.replace(loaded, config=merged), notes
