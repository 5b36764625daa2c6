"""Hostile profile values through the real-sshd transport: nothing executes.

Shell metacharacters are legal *values* (a served model name may contain `;`): they must reach
the server as literal text. Values that cannot be passed safely (newlines, NUL, malformed
flag or env names) must be rejected before the running server is touched.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import httpx
import pytest

from console.config_models import ServerProfile
from console.host.ssh import SshTransport
from console.server.events import CommandShown, PhaseStarted
from console.server.lifecycle import LifecycleError
from tests.support.server_fixtures import ServerEnv

pytestmark = pytest.mark.sshd


def hostile(marker: Path) -> list[str]:
    m = str(marker)
    return [f"; touch {m}", f"$(touch {m})", f"`touch {m}`", f"' ; touch {m}; '", f"| touch {m}",
            f"&& touch {m} #"]


def raw_profile(base: ServerProfile, **changes: object) -> ServerProfile:
    """Bypass the config layer's validators: the lifecycle must catch these itself."""
    return ServerProfile.model_construct(**{**base.__dict__, **changes})


async def test_shell_metacharacters_stay_literal_over_ssh(server_env: ServerEnv,
                                                          ssh_transport: SshTransport,
                                                          tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    values = hostile(marker)
    life = server_env.lifecycle(ssh_transport)
    base = server_env.profile(**{"served-model-name": values[0], "chat-template": values[1]})
    profile = base.model_copy(update={
        "model_path": values[2],
        "env": {"PLATEAU_HOSTILE": values[3], "OTHER": values[4]},
        "extra_args": ["--tokenizer-path", values[5]],
    })
    record = await life.restart(f"x{values[0]}/../y", profile, server_env.record_event)
    info = httpx.get(f"http://127.0.0.1:{server_env.port}/server_info", timeout=5,
                     trust_env=False).json()
    assert info["served_model_name"] == values[0]
    assert info["model_path"] == values[2]
    assert info["tokenizer_path"] == values[5]
    # the `$ …` line shown before the launch is exactly the argv that runs on the host
    (shown,) = [e.command for e in server_env.events if isinstance(e, CommandShown)]
    cmdline = Path(f"/proc/{record.pid}/cmdline").read_bytes().decode().split("\0")[:-1]
    env_items = [f"{k}={v}" for k, v in profile.env.items()]
    assert shlex.split(shown) == ["env", *env_items, *cmdline] == [
        "env", *env_items, *profile.argv()]
    environ = Path(f"/proc/{record.pid}/environ").read_bytes().split(b"\0")
    assert f"PLATEAU_HOSTILE={values[3]}".encode() in environ
    # the log file name is derived from the profile name but cannot escape the logs dir
    assert record.log_path is not None
    assert Path(record.log_path).parent == server_env.root / "run" / "logs"
    await life.stop()
    assert not marker.exists()


UNSAFE: list[dict[str, Any]] = [
    {"flags": {"served-model-name": "a\ntouch {m}"}},
    {"flags": {"x; touch {m}": "1"}},
    {"flags": {"--served-model-name": "x"}},
    {"extra_args": ["--x\n; touch {m}"]},
    {"extra_args": ["--ok", "\x00"]},
    {"env": {"A;touch {m}": "1"}},
    {"env": {"OK": "1\ntouch {m}"}},
    {"model_path": "m\n$(touch {m})"},
    {"launch": ["python", "-c", "x\ntouch {m}"]},
]


@pytest.mark.slow
async def test_unsafe_values_rejected_before_anything_stops(
    server_env: ServerEnv, ssh_transport: SshTransport, tmp_path: Path
) -> None:
    marker = tmp_path / "pwned"

    def fill(value: object) -> object:
        if isinstance(value, str):
            return value.replace("{m}", str(marker))
        if isinstance(value, list):
            return [fill(v) for v in value]
        if isinstance(value, dict):
            return {fill(k): fill(v) for k, v in value.items()}
        return value

    life = server_env.lifecycle(ssh_transport)
    running = await life.start("good", server_env.profile())
    base = server_env.profile()
    for changes in UNSAFE:
        server_env.events = []
        filled: dict[str, Any] = {k: fill(v) for k, v in changes.items()}
        if "flags" in filled:
            filled["flags"] = {**base.flags, **filled["flags"]}
        bad = raw_profile(base, **filled)
        with pytest.raises(LifecycleError) as caught:
            await life.restart("bad", bad, server_env.record_event)
        assert caught.value.phase.value == "validate", changes
        started = [e.phase.value for e in server_env.events if isinstance(e, PhaseStarted)]
        assert started == ["validate"], changes
    status = await life.status()
    assert status.running and status.record is not None and status.record.pid == running.pid
    assert len(server_env.logs()) == 1
    await life.stop()
    assert not marker.exists()
