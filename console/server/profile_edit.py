"""The logic behind the flags editor (no UI): which flags to offer, diffs, building a profile.

The editor offers the host's *discovered* choices: a flag appears only if the schema has it,
and a select lists exactly the choices the host's `--help` printed.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from console.config_models import FlagValue, ServerProfile
from console.server.flags import FlagSchema, FlagSpec
from console.server.validate import ValidationReport, split_extra_args, validate_profile

# Shown first and in this order when the host has them; other *-backend choice flags follow.
PREFERRED_SELECTS = (
    "moe-runner-backend",
    "attention-backend",
    "prefill-attention-backend",
    "decode-attention-backend",
    "dsa-prefill-backend",
    "dsa-decode-backend",
    "fp4-gemm-backend",
    "fp8-gemm-backend",
    "moe-a2a-backend",
    "quantization",
    "kv-cache-dtype",
    "cuda-graph-backend-decode",
    "cuda-graph-backend-prefill",
)
MAX_SELECTS = 16
NUMERIC_FIELDS = (
    "tp-size",
    "ep-size",
    "dp-size",
    "attn-dp-size",
    "mem-fraction-static",
    "max-running-requests",
    "chunked-prefill-size",
    "cuda-graph-max-bs-decode",
    "context-length",
)


@dataclass(frozen=True)
class EditableFlag:
    name: str
    kind: Literal["select", "number"]
    choices: tuple[str, ...] = ()
    value_type: str = "str"
    help: str = ""


def editable_flags(schema: FlagSchema) -> list[EditableFlag]:
    selects: list[FlagSpec] = [s for n in PREFERRED_SELECTS if (s := schema.flags.get(n))]
    selects = [s for s in selects if s.choices]
    others = sorted(
        (s for s in schema.flags.values()
         if s.choices and s.name.endswith("-backend") and s not in selects
         and not s.name.startswith(("speculative-", "sim-"))),
        key=lambda s: s.name,
    )
    chosen = (selects + others)[:MAX_SELECTS]
    fields = [EditableFlag(s.name, "select", s.choices or (), "str", s.help) for s in chosen]
    for name in NUMERIC_FIELDS:
        spec = schema.flags.get(name)
        if spec is not None and spec.takes_value:
            fields.append(EditableFlag(name, "number", (), spec.value_type, spec.help))
    return fields


@dataclass(frozen=True)
class FlagChange:
    flag: str
    before: str | None  # None: not set
    after: str | None

    @property
    def kind(self) -> Literal["added", "removed", "changed"]:
        if self.before is None:
            return "added"
        if self.after is None:
            return "removed"
        return "changed"


def _text(value: FlagValue) -> str:
    if value is True:
        return "on"
    return str(value)


def effective_flags(profile: ServerProfile, schema: FlagSchema | None = None) -> dict[str, str]:
    """Flag name -> value text as the server will see it (flags, then extra args)."""
    out: dict[str, str] = {}
    for name, value in profile.flags.items():
        if value is False:
            continue
        out[_canonical(name, schema)] = _text(value)
    uses, _stray = split_extra_args(list(profile.extra_args), schema)
    for use in uses:
        out[_canonical(use.name, schema)] = " ".join(use.values) if use.values else "on"
    return out


def flags_from_argv(argv: Sequence[str], schema: FlagSchema | None = None) -> dict[str, str]:
    """Flags of a running server's command line (e.g. its launch record), for diffs."""
    args = list(argv)
    start = next((i for i, a in enumerate(args) if a.startswith("--")), len(args))
    uses, _stray = split_extra_args(args[start:], schema)
    skip = {"model-path", "model", "host", "port"}
    return {
        _canonical(u.name, schema): " ".join(u.values) if u.values else "on"
        for u in uses
        if u.name not in skip
    }


def _canonical(name: str, schema: FlagSchema | None) -> str:
    if schema is None:
        return name
    spec = schema.get(name)
    if spec is None:
        matches = schema.prefix_matches(name)
        spec = schema.get(matches[0]) if len(matches) == 1 else None
    return spec.name if spec else name


def diff_flags(before: Mapping[str, str], after: Mapping[str, str]) -> list[FlagChange]:
    changes = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        if old != new:
            changes.append(FlagChange(name, old, new))
    return changes


class ExtraArgsError(ValueError):
    pass


def parse_extra_args(text: str) -> list[str]:
    """Free-form args as typed by the operator (shell-like quoting), split with shlex."""
    if "\n" in text or "\r" in text or "\x00" in text:
        raise ExtraArgsError("extra args must be on one line")
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise ExtraArgsError(f"extra args: {exc}") from None


def coerce_number(text: str, value_type: str) -> FlagValue:
    """'8' -> 8, '0.85' -> 0.85; raises ValueError for anything else."""
    text = text.strip()
    if value_type == "int":
        return int(text)
    if value_type == "float":
        return float(text)
    return text


def build_profile(
    base: ServerProfile,
    selects: Mapping[str, str | None],
    numbers: Mapping[str, str],
    extra_text: str,
    schema: FlagSchema,
    fields: Sequence[EditableFlag],
) -> tuple[ServerProfile | None, ValidationReport | None, list[str]]:
    """Apply the editor's values to `base`. Returns (profile, report, input errors)."""
    errors: list[str] = []
    flags: dict[str, FlagValue] = dict(base.flags)
    types = {f.name: f.value_type for f in fields}
    for name, choice in selects.items():
        if choice:
            flags[name] = choice
        else:
            flags.pop(name, None)
    for name, text in numbers.items():
        if not text.strip():
            flags.pop(name, None)
            continue
        try:
            flags[name] = coerce_number(text, types.get(name, "str"))
        except ValueError:
            errors.append(f"--{name}: {text!r} is not a number")
    try:
        extra = parse_extra_args(extra_text)
    except ExtraArgsError as exc:
        errors.append(str(exc))
        extra = list(base.extra_args)
    if errors:
        return None, None, errors
    try:
        profile = base.model_copy(update={"flags": flags, "extra_args": extra})
        profile = ServerProfile.model_validate(profile.model_dump())
    except ValueError as exc:
        return None, None, [str(exc).splitlines()[0]]
    report = validate_profile(profile, schema)
    return profile, report, []


def apply_changes(
    base: ServerProfile,
    flags: Mapping[str, FlagValue | None],
    env: Mapping[str, str | None],
    schema: FlagSchema | None,
) -> tuple[ServerProfile, ValidationReport]:
    """`base` with flag and env changes (None removes one), checked as the flags editor checks
    its result (e.g. a diagnosis suggestion becoming profile B of an A/B)."""
    new_flags: dict[str, FlagValue] = dict(base.flags)
    extra = list(base.extra_args)
    for name, value in flags.items():
        new_flags.pop(name, None)
        if f"--{name}" in extra:  # the flag given in extra_args: drop it (and its value)
            at = extra.index(f"--{name}")
            stop = at + 1
            while stop < len(extra) and not extra[stop].startswith("--"):
                stop += 1
            del extra[at:stop]
        if value is not None:
            new_flags[name] = value
    new_env = {k: v for k, v in {**base.env, **env}.items() if v is not None}
    profile = ServerProfile.model_validate(
        base.model_copy(update={"flags": new_flags, "extra_args": extra, "env": new_env})
        .model_dump())
    return profile, validate_profile(profile, schema)
