"""A profile written for one SGLang release, launched on another: its renamed flags in the
names of the host's version (console.sglang.flags holds the renames and each release's flags).

Only a flag the host's parser lacks, whose rename lands on flags the host's parser has, is
rewritten; everything else is left to validation, which refuses it naming the new flag.
"""

from __future__ import annotations

from dataclasses import dataclass

from console.config_models import FlagValue, ServerProfile
from console.server.flags import FlagSchema
from console.sglang.flags import translate


@dataclass(frozen=True)
class Renamed:
    old: str  # without dashes, as the profile wrote it
    flags: dict[str, FlagValue]  # what the host gets instead (no dashes)
    note: str


def rename_for(name: str, value: FlagValue, schema: FlagSchema | None) -> Renamed | None:
    """The host's spelling of profile flag `name`, when the host lacks it and has the new one."""
    if schema is None or schema.get(name) is not None:
        return None
    text = None if value is True or value is False else str(value)
    result = translate(name, text, schema.version)
    if result.refused or not result.changed:
        return None
    flags: dict[str, FlagValue] = {}
    for flag, new_value in result.flags:
        bare = flag.lstrip("-")
        if schema.get(bare) is None:
            return None
        if new_value is None:
            flags[bare] = True
        else:  # the profile's own value (and its type) when the rename keeps it
            flags[bare] = value if new_value == text else new_value
    return Renamed(name, flags, result.note)


def translate_profile(profile: ServerProfile, schema: FlagSchema | None
                      ) -> tuple[ServerProfile, list[Renamed]]:
    """`profile` with its `flags` table in the host version's names, and what was renamed.
    (Free-form extra_args are left as written: validation reports them.)"""
    renamed: list[Renamed] = []
    flags: dict[str, FlagValue] = {}
    for name, value in profile.flags.items():
        found = rename_for(name, value, schema) if value is not False else None
        if found is None:
            flags[name] = value
            continue
        renamed.append(found)
        flags.update(found.flags)
    if not renamed:
        return profile, []
    return profile.model_copy(update={"flags": flags}), renamed
