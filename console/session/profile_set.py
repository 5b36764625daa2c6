"""The launch profiles of one console run: one set, shared by the app and every session.

The flags editor adds to it (a profile saved, or kept for this run); everyone holding the set
sees the addition at once, and nobody keeps a copy to be told about it. The jobs look profiles
up in a `PlateauConfig`, so `applied(base)` gives `base` with this set's profiles: made once
per change and base, shared by all who ask with that base (the app and its sessions share one).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from console.config_models import PlateauConfig, ServerProfile




class ProfileSet(Mapping[str, "ServerProfile"]):
    def __init__(self, profiles: Mapping[str, ServerProfile]) -> None:
        self._profiles = dict(profiles)
        self.version = 0
        """Additions so far: 0 means the set is what the config file (and profiles.d) gave."""
        self._applied: dict[int, tuple[PlateauConfig, int, PlateauConfig]] = {}

    def __getitem__(self, name: str) -> ServerProfile:
        return self._profiles[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._profiles)

    def __len__(self) -> int:
        return len(self._profiles)

    def add(self, name: str, profile: ServerProfile) -> None:
        """Add `name` (or replace the profile of that name) for everyone holding the set."""
        self._profiles[name] = profile
        self.version += 1

    def applied(self, base: PlateauConfig) -> PlateauConfig:
        """`base` with this set's profiles; `base` itself until the set has changed (a
        session built with a config of its own keeps it until the operator adds one)."""
        if self.version == 0:
            return base
        made = self._applied.get(id(base))
        if made is not None and made[0] is base and made[1] == self.version:
            return made[2]
        config = base.model_copy(update={"profiles": dict(self._profiles)})
        self._applied[id(base)] = (base, self.version, config)
        return config
