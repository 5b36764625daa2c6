"""An upgrade A/B: one profile's flags on two installs of SGLang ("did the upgrade regress me?",
sglang#5223, #5396, #7070).

`P@0.5.18` names profile P launched by its install "0.5.18" (`ServerProfile.installs`: a
version label -> that install's launch command). Each side's flags are translated to its
install's names when it launches (console.server.translate: a rename either way is applied
with a note; a flag the install's parser lacks, with no rename, is refused by validation,
naming the flag to use, before anything is stopped). What each side really ran, its version
as its server reported it and the flags as launched, goes in the result (`SideFacts`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from console.config_models import ServerProfile
from console.server.flags import FlagSchema
from console.server.translate import translate_profile


class UnknownInstall(ValueError):
    """`P@V` names a profile or install the config lacks."""


def split_install(name: str) -> tuple[str, str | None]:
    """`P@0.5.18` -> ("P", "0.5.18"); a plain name -> (name, None)."""
    base, at, label = name.partition("@")
    return (base, label) if at else (name, None)


def profile_at(profiles: Mapping[str, ServerProfile], name: str) -> ServerProfile:
    """The profile `name` names: P itself, or P on its install `V` (`P@V`)."""
    base, label = split_install(name)
    if base not in profiles:
        known = ", ".join(sorted(profiles)) or "none"
        raise UnknownInstall(f"unknown profile {base!r} (known: {known})")
    profile = profiles[base]
    if label is None:
        return profile
    if label not in profile.installs:
        known = ", ".join(sorted(profile.installs)) or "none: add [profiles.NAME.installs]"
        raise UnknownInstall(f"profile {base!r} has no install {label!r} (installs: {known})")
    return profile.model_copy(update={"launch": list(profile.installs[label])})


@dataclass(frozen=True)
class SideFacts:
    """What one side of an A/B really ran."""

    version: str  # as the server reported it (/server_info), "" when it did not say
    flags: dict[str, object]  # as launched: translated to the install's names
    renamed: tuple[str, ...] = ()  # one note per translated flag


def launched(profile: ServerProfile, schema: FlagSchema | None) -> tuple[dict[str, object],
                                                                       tuple[str, ...]]:
    """The profile's flags as its install takes them, and the notes of what was renamed."""
    translated, renamed = translate_profile(profile, schema)
    return dict(translated.flags), tuple(r.note for r in renamed)
