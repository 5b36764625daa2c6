"""Validating a launch profile before anything is stopped.

Two layers: `check_safety` needs no schema (names, control characters, env names) and is what
keeps hostile values out; `validate_profile` adds the host's discovered schema (unknown flags
with rename and near-miss suggestions, choices, numbers, switches, abbreviations).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from console.config_models import FlagValue, ServerProfile, oversize_values
from console.errors import UsageError
from console.server.flags import FlagSchema, FlagSpec
from console.server.known import PROFILE_FIELD_FLAGS, RANGES, RENAMES
from console.server.translate import rename_for
from console.sglang.flags import translate

FLAG_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")
ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
_HUMAN_INT = re.compile(r"^\d+(?:\.\d+)?[kKmMgG]?$")
_NEGATIVE_NUMBER = re.compile(r"^-\d+(?:\.\d+)?$")

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Issue:
    severity: Severity
    code: str
    message: str
    flag: str | None = None
    suggestion: str | None = None

    def __str__(self) -> str:
        hint = f" ({self.suggestion})" if self.suggestion else ""
        return f"{self.severity}: {self.message}{hint}"


@dataclass(frozen=True)
class ValidationReport:
    issues: tuple[Issue, ...] = ()
    checked_against: str | None = None  # e.g. "sglang 0.5.23 --help on gpu-box-1"

    @property
    def errors(self) -> list[Issue]:
        return [i for i in self.issues if i.severity == "error"]

    @property
    def warnings(self) -> list[Issue]:
        return [i for i in self.issues if i.severity == "warning"]

    @property
    def ok(self) -> bool:
        return not self.errors

    def summary(self) -> str:
        return "\n".join(str(i) for i in self.issues) or "ok"

    def raise_if_errors(self, what: str = "profile") -> None:
        if not self.ok:
            lines = "; ".join(str(i) for i in self.errors)
            raise ProfileInvalid(f"{what} rejected before anything was stopped: {lines}", self)


class ProfileInvalid(UsageError):
    def __init__(self, message: str, report: ValidationReport) -> None:
        super().__init__(message)
        self.report = report


@dataclass
class _Collector:
    issues: list[Issue] = field(default_factory=list)

    def error(self, code: str, message: str, flag: str | None = None,
              hint: str | None = None) -> None:
        self.issues.append(Issue("error", code, message, flag, hint))

    def warn(self, code: str, message: str, flag: str | None = None,
             hint: str | None = None) -> None:
        self.issues.append(Issue("warning", code, message, flag, hint))


def _has_control(text: str) -> bool:
    return any(ord(c) < 0x20 or ord(c) == 0x7F for c in text)


@dataclass(frozen=True)
class FlagUse:
    """One flag as it will appear on the command line."""

    name: str  # without dashes, as written
    values: tuple[str, ...]
    origin: Literal["flags", "extra_args"]
    raw: FlagValue | None = None


def split_extra_args(
    extra: list[str], schema: FlagSchema | None
) -> tuple[list[FlagUse], list[str]]:
    """Group free-form args into flags and their values; return (uses, stray tokens)."""
    uses: list[FlagUse] = []
    stray: list[str] = []
    index = 0
    while index < len(extra):
        token = extra[index]
        index += 1
        if not token.startswith("-") or _NEGATIVE_NUMBER.match(token):
            stray.append(token)
            continue
        name, eq, inline = token.lstrip("-").partition("=")
        if eq:
            uses.append(FlagUse(name, (inline,), "extra_args"))
            continue
        spec = schema.get(name) if schema else None
        values: list[str] = []
        limit = {"0": 0, "1": 1, "?": 1}.get(spec.nargs, 10_000) if spec else 10_000
        while (
            index < len(extra)
            and len(values) < limit
            and (not extra[index].startswith("-") or _NEGATIVE_NUMBER.match(extra[index]))
        ):
            values.append(extra[index])
            index += 1
        uses.append(FlagUse(name, tuple(values), "extra_args"))
    return uses, stray


def _flag_uses(
    profile: ServerProfile, schema: FlagSchema | None
) -> tuple[list[FlagUse], list[str]]:
    uses: list[FlagUse] = []
    for name, value in profile.flags.items():
        if value is True or value is False:
            values: tuple[str, ...] = ()
        else:
            values = (str(value),)
        uses.append(FlagUse(name, values, "flags", value))
    extra_uses, stray = split_extra_args(list(profile.extra_args), schema)
    return uses + extra_uses, stray


def check_safety(profile: ServerProfile) -> ValidationReport:
    """Checks that need no schema: what could be abused or break the command line."""
    out = _Collector()
    oversize = oversize_values(profile)
    if oversize:  # (profiles edited at run time skip the config's validators)
        for problem in oversize:
            out.error("too-long", problem)
        return ValidationReport(tuple(out.issues))
    for part in profile.launch:
        if _has_control(part) or "\x00" in part:
            out.error("control-char", "launch command contains a control character or newline")
    if _has_control(profile.model_path):
        out.error("control-char", "model_path contains a control character or newline")
    if not profile.model_path.strip():
        out.error("empty", "model_path is empty")
    if _has_control(profile.host):
        out.error("control-char", "host contains a control character or newline")
    for name, value in profile.flags.items():
        if not FLAG_NAME.match(name):
            out.error(
                "bad-name",
                f"flag name {name!r} is not valid (lowercase letters, digits and '-', "
                "written without the leading --)",
                name,
            )
        if isinstance(value, str) and _has_control(value):
            out.error("control-char", f"value of --{name} contains a control character", name)
    for token in profile.extra_args:
        if _has_control(token):
            out.error("control-char", f"extra argument {token!r} contains a control character")
        elif token.startswith("-") and not _NEGATIVE_NUMBER.match(token):
            name = token.lstrip("-").partition("=")[0]
            if not token.startswith("--") or not FLAG_NAME.match(name):
                out.error("bad-name", f"extra argument {token!r} is not a valid --flag")
    for name, value in profile.env.items():
        if not ENV_NAME.match(name):
            out.error("bad-env", f"environment variable name {name!r} is not valid", name)
        if _has_control(value):
            out.error("control-char", f"value of environment variable {name} has a control char")
    if profile.api_key_env is not None and not ENV_NAME.match(profile.api_key_env):
        out.error("bad-env", f"api_key_env {profile.api_key_env!r} is not a valid variable name")
    return ValidationReport(tuple(out.issues))


def validate_profile(
    profile: ServerProfile, schema: FlagSchema | None, *, checked_against: str | None = None
) -> ValidationReport:
    """Safety checks plus checks against the host's flag schema (when known)."""
    out = _Collector(list(check_safety(profile).issues))
    uses, stray = _flag_uses(profile, schema)
    for token in stray:
        out.error("stray", f"extra argument {token!r} does not follow a --flag")
    seen: dict[str, str] = {}
    for use in uses:
        if not FLAG_NAME.match(use.name):
            continue  # already reported by check_safety
        guarded = guarded_target(use.name, schema)
        if guarded is not None:
            field_name = PROFILE_FIELD_FLAGS[guarded]
            read_as = "" if guarded == use.name else (
                f" (SGLang's argparse reads it as --{guarded}, abbreviations allowed)"
            )
            out.error(
                "profile-field",
                f"--{use.name} is set by the profile's `{field_name}`{read_as}; remove it "
                f"from {use.origin}",
                use.name,
            )
            continue
        if schema is None:
            continue
        renamed = rename_for(use.name, use.raw if use.raw is not None else (
            use.values[0] if use.values else True), schema) if use.origin == "flags" else None
        if renamed is not None:
            shown = " ".join(f"--{k}" if v is True else f"--{k} {v}"
                             for k, v in renamed.flags.items())
            out.warn("translated", f"--{use.name} is launched as {shown} on this host: "
                     f"{renamed.note}", use.name, f"write {shown} in the profile")
            continue
        spec = _resolve(use.name, schema, out)
        if spec is None:
            continue
        if spec.name in seen:
            out.error(
                "duplicate",
                f"--{spec.name} is given twice (as --{seen[spec.name]} and --{use.name})",
                spec.name,
            )
        seen[spec.name] = use.name
        for issue in _check_value(spec, use):
            out.issues.append(issue)
    _known_bad(uses, out)
    return ValidationReport(tuple(out.issues), checked_against)


def _known_bad(uses: list[FlagUse], out: _Collector) -> None:
    """Flag combinations with known failures on some GPUs (console/diagnose/known_bad.toml):
    a warning with its source, the launch still goes ahead."""
    from console.diagnose.known_bad import check_flags

    flags = {use.name: (use.values[0] if use.values else True) for use in uses}
    for combo in check_flags(flags):
        out.warn("known-bad", combo.warning(), next(iter(combo.flags)), combo.hint)


def guarded_target(name: str, schema: FlagSchema | None) -> str | None:
    """The profile-field flag (--host, --port, --model-path, --api-key) that `--name` would
    set on SGLang's command line, or None.

    argparse accepts any unambiguous prefix (allow_abbrev), so `--ho` is `--host` and
    `--model-p=X` replaces the model. The name is resolved against the host's schema like
    argparse does; any candidate that is a guarded flag counts (an ambiguous prefix is still
    refused). Unless the schema has the exact name, a prefix of a guarded name counts too,
    so the guard holds without a schema and for launch commands whose help lacks them."""
    bare = name.lstrip("-")
    candidates: list[str] = [bare] if bare in PROFILE_FIELD_FLAGS else []
    if schema is not None:
        candidates += [n for spec in schema.resolve(bare) for n in spec.names]
    if schema is None or schema.get(bare) is None:
        candidates += [n for n in PROFILE_FIELD_FLAGS if n.startswith(bare)]
    for candidate in candidates:
        if candidate in PROFILE_FIELD_FLAGS:
            return "model-path" if candidate == "model" else candidate
    return None


def _resolve(name: str, schema: FlagSchema, out: _Collector) -> FlagSpec | None:
    spec = schema.get(name)
    if spec is not None:
        if spec.deprecated:
            out.warn("deprecated", f"--{name} is deprecated: {spec.help}", name)
        return spec
    rename = RENAMES.get(name)
    rename_hint = None
    if rename is not None and schema.get(rename[0]) is not None:
        new, since, note = rename
        rename_hint = f"renamed to --{new} in SGLang {since}: {note}"
    elif schema.version and (refused := translate(name, None, schema.version).refused):
        rename_hint = refused if "renamed" in refused or "call it" in refused else None
    prefixes = schema.prefix_matches(name)
    if len(prefixes) == 1 and rename_hint is None:
        out.warn(
            "abbreviation",
            f"--{name} is an abbreviation of --{prefixes[0]}; write the full name",
            name,
            f"use --{prefixes[0]}",
        )
        return schema.get(prefixes[0])
    if len(prefixes) > 1:
        listed = ", ".join(f"--{p}" for p in prefixes[:6])
        out.error(
            "ambiguous",
            f"--{name} is ambiguous: could match {listed}",
            name,
            rename_hint,
        )
        return None
    if rename_hint:
        out.error("renamed", f"--{name} is not a flag of this SGLang", name, rename_hint)
        return None
    close = difflib.get_close_matches(name, schema.all_names(), n=3, cutoff=0.6)
    hint = "did you mean " + " or ".join(f"--{c}" for c in close) + "?" if close else None
    out.error("unknown-flag", f"--{name} is not a flag of this launch command", name, hint)
    return None


def _check_value(spec: FlagSpec, use: FlagUse) -> Iterator[Issue]:
    flag = f"--{use.name}"
    if not spec.takes_value:
        if use.raw is not None and not isinstance(use.raw, bool):
            yield Issue(
                "error", "switch-value", f"{flag} is a switch: use true or false", spec.name
            )
        elif use.values:
            yield Issue("error", "switch-value", f"{flag} takes no value", spec.name)
        return
    if use.raw is True or (use.raw is None and not use.values and spec.nargs in ("1", "+")):
        yield Issue("error", "needs-value", f"{flag} needs a value ({spec.metavar or 'VALUE'})",
                    spec.name)
        return
    for value in use.values:
        if spec.choices is not None and value not in spec.choices:
            close = difflib.get_close_matches(value, list(spec.choices), n=2, cutoff=0.5)
            hint = (
                "did you mean " + " or ".join(close) + "?"
                if close
                else "choose from " + ", ".join(spec.choices)
            )
            yield Issue("error", "bad-choice", f"{flag}: {value!r} is not a valid choice",
                        spec.name, hint)
        elif spec.value_type in ("int", "float", "human_int"):
            number = _parse_number(value, spec.value_type)
            if number is None:
                yield Issue("error", "bad-number",
                            f"{flag}: {value!r} is not {_article(spec.value_type)}", spec.name)
            elif spec.name in RANGES:
                low, high = RANGES[spec.name]
                if not low <= number <= high:
                    yield Issue("error", "out-of-range",
                                f"{flag}: {value} is outside {low:g}..{high:g}", spec.name)


def _article(value_type: str) -> str:
    return {"int": "an integer", "float": "a number", "human_int": "a count like 64k"}[value_type]


def _parse_number(value: str, value_type: str) -> float | None:
    try:
        if value_type == "int":
            return int(value)
        if value_type == "float":
            return float(value)
    except ValueError:
        return None
    if _HUMAN_INT.match(value):
        scale = {"k": 1e3, "m": 1e6, "g": 1e9}.get(value[-1].lower(), 1.0)
        return float(value.rstrip("kKmMgG")) * scale
    return None
