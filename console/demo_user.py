"""`plateau demo` respects the user: their config's `[ui]`, `[keymap]`, sweep presets and theme
apply to the demo host, and the profiles they saved from the demo's flags editor come back.

A profile saved from an earlier demo names that run's port and GPU state file (the run dir is
a fresh temp dir each time): it is moved onto this run (port, state file, Python) when loaded.
Profiles for real hosts in the same `profiles.d` are left out of the demo (it cannot run them).
"""

from __future__ import annotations

from pathlib import Path

from console.config import LoadedConfig
from console.config_models import PlateauConfig, ServerProfile
from console.session.profiles import load_saved_profiles, profiles_dir

SIM_LAUNCH_TAIL = ("-m", "console.sim")
RUN_FLAGS = ("sim-state-file", "sim-seed")  # belong to one demo run, not to the profile


def is_sim_profile(profile: ServerProfile) -> bool:
    return tuple(profile.launch[-2:]) == SIM_LAUNCH_TAIL


def onto_this_run(saved: ServerProfile, base: ServerProfile) -> ServerProfile:
    """`saved` with this demo run's launch, port and per-run flags (from `base`)."""
    flags = {k: v for k, v in saved.flags.items() if k not in RUN_FLAGS}
    flags.update({k: base.flags[k] for k in RUN_FLAGS if k in base.flags})
    return saved.model_copy(update={"launch": list(base.launch), "port": base.port,
                                    "flags": flags})


def demo_with_user(
    demo: PlateauConfig, user: LoadedConfig
) -> tuple[PlateauConfig, Path, list[str]]:
    """The demo config with the user's settings and saved demo profiles; (config, the
    profiles.d to save to, notes for the event log)."""
    mine = user.config
    sweeps = {**demo.sweeps, **mine.sweeps}  # the user's presets (theirs win on a name)
    update: dict[str, object] = {"ui": mine.ui, "keymap": dict(mine.keymap), "sweeps": sweeps}
    if user.path is not None:
        update["theme"] = mine.theme
    directory = profiles_dir(user)
    saved, notes = load_saved_profiles(directory)
    base = next(iter(demo.profiles.values()))
    profiles = dict(demo.profiles)
    for name, profile in saved.items():
        if name in profiles or not is_sim_profile(profile):
            continue  # the demo's own win; real-host profiles cannot run here
        profiles[name] = onto_this_run(profile, base)
    update["profiles"] = profiles
    return demo.model_copy(update=update), directory, notes
