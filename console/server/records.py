"""The launch record `<run_dir>/server.json`: what runs on the host and how it was started.

It holds names of environment variables, never their values, and the command line with
secrets redacted, so it is safe to show, copy and commit to the run history.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from console.redact import REDACTED, redact_argv
from console.text import sanitize

__all__ = ["REDACTED", "LaunchRecord", "display_command", "redact_argv", "redact_env"]

_SECRET_ENV = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)


class LaunchRecord(BaseModel):
    model_config = ConfigDict(frozen=True)

    # Bounded as the kernel bounds them (pid_max is at most 2**22): a record edited on the host
    # with an absurd number is no record, never an OverflowError in a signal call.
    pid: Annotated[int, Field(ge=0, le=1 << 22)]
    pgid: Annotated[int, Field(ge=0, le=1 << 22)]
    port: Annotated[int, Field(ge=0, le=65535)]
    host: str = "127.0.0.1"
    profile: str
    argv: list[str]  # redacted
    env_names: list[str] = Field(default_factory=list)
    log_path: str | None = None
    started_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    sglang_version: str | None = None
    origin: Literal["launched", "adopted"] = "launched"
    state: Literal["starting", "ready", "stopped", "failed"] = "starting"
    gpu_baseline_mib: list[float] | None = None
    # What proves a live pid is still this server (and not a later process reusing the pid):
    # its start time in clock ticks after boot, the boot id, and (for launched servers) the
    # PLATEAU_LAUNCH_ID in its environment. Stop/restart signal nothing that fails the proof.
    launch_id: str | None = None
    start_ticks: Annotated[int, Field(ge=0, le=1 << 63)] | None = None
    boot_id: str | None = None

    @field_validator("*", mode="after")
    @classmethod
    def _host_text(cls, value: Any) -> Any:
        # The record is read back from the host, which anyone with the account can edit:
        # its text never reaches a terminal or screen raw (escapes, BEL, bidi controls).
        if isinstance(value, str):
            return sanitize(value)
        if isinstance(value, list):
            return [sanitize(item) if isinstance(item, str) else item for item in value]
        return value

    def uptime_s(self, now: datetime | None = None) -> float:
        return ((now or datetime.now(UTC)) - self.started_at).total_seconds()


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    return {k: (REDACTED if _SECRET_ENV.search(k) else v) for k, v in env.items()}


def display_command(argv: Sequence[str], env: Mapping[str, str] | None = None) -> str:
    """The command line an operator sees before it runs: `env A=1 prog args` (redacted)."""
    prefix = [f"{k}={v}" for k, v in redact_env(env or {}).items()]
    return shlex.join([*(["env", *prefix] if prefix else []), *redact_argv(argv)])


_PER_LAUNCH = ("--config", "--api-key")
"""Values a launch sets for itself: the merged key file's path (a new one each launch) and
the key, shown redacted."""


def _flags_of(argv: Sequence[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in _PER_LAUNCH:
            skip = True
        elif not arg.startswith(tuple(f"{f}=" for f in _PER_LAUNCH)):
            out.append(arg)
    return out


def launched_other_flags(profile_argv: Sequence[str], launched: Sequence[str]) -> bool:
    """Whether a server launched with `launched` (its record's redacted argv) runs another
    command line than the profile's (`ServerProfile.argv()`): restarted into other flags
    under that name, by this console or anyone else."""
    return _flags_of(redact_argv(list(profile_argv))) != _flags_of(launched)
