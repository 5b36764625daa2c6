"""The launch record `<run_dir>/server.json`: what runs on the host and how it was started.

It holds names of environment variables, never their values, and the command line with
secrets redacted, so it is safe to show, copy and commit to the run history.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

REDACTED = "<redacted>"
_SECRET_FLAG = re.compile(r"^--(?:admin-)?api-key$|token|secret|password", re.IGNORECASE)
_SECRET_ENV = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)


class LaunchRecord(BaseModel):
    model_config = ConfigDict(frozen=True)

    pid: int
    pgid: int
    port: int
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
    start_ticks: int | None = None
    boot_id: str | None = None

    def uptime_s(self, now: datetime | None = None) -> float:
        return ((now or datetime.now(UTC)) - self.started_at).total_seconds()


def redact_argv(argv: Sequence[str]) -> list[str]:
    """Replace the values of secret-looking flags (`--api-key X`, `--api-key=X`)."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(REDACTED)
            hide_next = False
            continue
        name, eq, _value = arg.partition("=")
        if name.startswith("--") and _SECRET_FLAG.search(name):
            if eq:
                out.append(f"{name}={REDACTED}")
            else:
                out.append(arg)
                hide_next = True
            continue
        out.append(arg)
    return out


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    return {k: (REDACTED if _SECRET_ENV.search(k) else v) for k, v in env.items()}


def display_command(argv: Sequence[str], env: Mapping[str, str] | None = None) -> str:
    """The command line an operator sees before it runs: `env A=1 prog args` (redacted)."""
    prefix = [f"{k}={v}" for k, v in redact_env(env or {}).items()]
    return shlex.join([*(["env", *prefix] if prefix else []), *redact_argv(argv)])
