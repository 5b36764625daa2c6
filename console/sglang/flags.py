"""SGLang's flag names per version: which flags a release takes, what was renamed or removed,
and the translation of a flag written for one release to the names of another.

The option lists in data/options-<version>.json are each release's own argparse parser:
0.5.23 from the reference's Appendix A (docs/sglang.md), 0.5.18 and 0.4.10 read from the
PyPI wheels' `ServerArgs.add_cli_args` (srt/server_args.py of sglang==0.5.18 / ==0.4.10;
choices that those parsers import from other modules, such as the reasoning and tool-call
parser names, are left unchecked: `choices` is null there).

The renames come from SGLang's CUDA-graph refactor (PR #23906, RFC #23004): 0.5.18 still
accepts the old names as deprecated aliases (srt/server_args.py of v0.5.18, "Deprecated alias
for --cuda-graph-max-bs-decode."), 0.5.23 no longer has them, so `--cuda-graph-max-bs` is an
argparse prefix of two flags there and fails as ambiguous (exit 2).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from console.sglang.versions import DEFAULT_VERSION, traits_for

DATA = Path(__file__).with_name("data")


@dataclass(frozen=True)
class Rename:
    """`old` became `new` (with `value` when the new form is one value of a valued flag)."""

    old: str
    new: str
    value: str | None = None
    also: tuple[tuple[str, str], ...] = ()  # further new flags the old one sets, with values
    source: str = "sgl-project/sglang PR #23906 (CUDA-graph refactor)"


RENAMES: tuple[Rename, ...] = (
    Rename("--cuda-graph-max-bs", "--cuda-graph-max-bs-decode"),
    Rename("--cuda-graph-bs", "--cuda-graph-bs-decode"),
    Rename("--piecewise-cuda-graph-max-tokens", "--cuda-graph-max-bs-prefill"),
    Rename("--piecewise-cuda-graph-tokens", "--cuda-graph-bs-prefill"),
    Rename("--disable-piecewise-cuda-graph", "--cuda-graph-backend-prefill", "disabled"),
    Rename("--enable-breakable-cuda-graph", "--cuda-graph-backend-prefill", "breakable"),
    Rename("--disable-cuda-graph", "--cuda-graph-backend-decode", "disabled",
           also=(("--cuda-graph-backend-prefill", "disabled"),)),
    Rename("--nsa-prefill-backend", "--dsa-prefill-backend",
           source="srt/server_args.py of v0.5.18: '[Deprecated] Use --dsa-prefill-backend'"),
    Rename("--nsa-decode-backend", "--dsa-decode-backend",
           source="srt/server_args.py of v0.5.18: '[Deprecated] Use --dsa-decode-backend'"),
    Rename("--stream-output", "--incremental-streaming-output",
           source="srt/server_args.py of v0.5.18 (DeprecatedStoreTrueAction)"),
)


_NO_OP_WITHOUT_PREFILL_GRAPHS = {("--cuda-graph-backend-prefill", "disabled"),
                                  ("--disable-prefill-cuda-graph", None)}


@cache
def options(version: str | None = None) -> tuple[dict[str, Any], ...]:
    """The rows of `version`'s parser (the nearest known release's), in argparse order."""
    known = traits_for(version or DEFAULT_VERSION).version
    rows: list[dict[str, Any]] = json.loads((DATA / f"options-{known}.json").read_text())
    return tuple(rows)


@cache
def _by_name(version: str) -> dict[str, dict[str, Any]]:
    return {name: row for row in options(version) for name in row["names"]}


def _known(version: str | None) -> str:
    return traits_for(version or DEFAULT_VERSION).version


def takes(flag: str, version: str | None = None) -> bool:
    """Whether `version`'s parser has the exact option `flag` (no prefix matching)."""
    return _flag(flag) in _by_name(_known(version))


def deprecated(flag: str, version: str | None = None) -> str | None:
    """The replacement `version` names for a deprecated flag it still takes, else None."""
    row = _by_name(_known(version)).get(_flag(flag))
    if row is None or not str(row.get("type", "")).startswith("deprecated"):
        return None
    return str(row.get("new_flag") or "a newer flag")


def _flag(name: str) -> str:
    name = name.strip()
    return name if name.startswith("--") else "--" + name


@dataclass(frozen=True)
class Translation:
    """A flag as `version` takes it: `flags` (name, value) pairs, or `refused` with why."""

    original: str
    flags: tuple[tuple[str, str | None], ...] = ()
    note: str = ""
    refused: str = ""

    @property
    def changed(self) -> bool:
        return bool(self.refused) or self.flags != ((self.original, None),)


def translate(flag: str, value: str | None, version: str | None) -> Translation:
    """`flag` (with `value`, None for a switch) in the names of SGLang `version`.

    Unchanged when the release takes it as it is (a deprecated alias is renamed too, so the
    server does not print a deprecation warning for what Plateau wrote); renamed with a note
    when a rename in either direction fits; refused, naming the flag to use, otherwise."""
    name = _flag(flag)
    known = _known(version)
    if (name, value) in _NO_OP_WITHOUT_PREFILL_GRAPHS and not traits_for(known).prefill_graphs:
        return Translation(name, (), note=f"dropped {name} {value}: SGLang {known} captures no "
                           "prefill CUDA graphs (0.4.10 model_runner.py: decode graphs only)")
    if takes(name, known) and deprecated(name, known) is None:
        return Translation(name, ((name, value),))
    for rename in RENAMES:
        target = _rename_target(rename, name, value, known)
        if target is not None:
            pairs, note = target
            return Translation(name, pairs, note=f"{note} (source: {rename.source})")
    if takes(name, known):  # deprecated, no rename known: keep it, the server warns
        return Translation(name, ((name, value),),
                           note=f"{name} is deprecated in SGLang {known}")
    hint = _hint(name, known)
    return Translation(name, refused=f"SGLang {known} has no {name}{hint}")


def _rename_target(rename: Rename, name: str, value: str | None, version: str
                   ) -> tuple[tuple[tuple[str, str | None], ...], str] | None:
    if name == rename.old and takes(rename.new, version):
        pairs: tuple[tuple[str, str | None], ...] = (
            (rename.new, rename.value if rename.value is not None else value),
            *((f, v) for f, v in rename.also if takes(f, version)))
        shown = " ".join(f"{f} {v}" if v is not None else f for f, v in pairs)
        return pairs, f"{name} is {shown} in SGLang {version}"
    if name == rename.new and not takes(name, version) and takes(rename.old, version):
        if rename.value is not None:
            if value != rename.value:
                return None
            return ((rename.old, None),), f"{name} {value} is {rename.old} in SGLang {version}"
        return ((rename.old, value),), f"{name} is {rename.old} in SGLang {version}"
    return None


def _hint(name: str, version: str) -> str:
    for rename in RENAMES:
        if name == rename.old:
            return f" (renamed {rename.new}; source: {rename.source})"
        if name == rename.new:
            return f" (older releases call it {rename.old})"
    return ""


def flag_name(flag: str, version: str | None = None, value: str | None = None) -> str:
    """The name SGLang `version` uses for `flag`: what a suggestion should print. A flag no
    rename fits comes back as it was given."""
    result = translate(flag, value, version)
    if result.refused or not result.flags:
        return _flag(flag)
    return result.flags[0][0]


def graph_max_bs_flag(version: str | None = None) -> str:
    """The flag that sets the largest captured decode batch on SGLang `version`."""
    return "--cuda-graph-max-bs-decode" if traits_for(
        version or DEFAULT_VERSION).per_phase_graph_flags else "--cuda-graph-max-bs"
