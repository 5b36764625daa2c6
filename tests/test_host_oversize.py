"""Oversize profile values are refused at validation, naming the key (issue 12, item 11).

Before: a 150 KB value reached the host as a 200 KB exec request ("Connection reset by peer")
after a 150 KB command line had been printed.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from console.cli import main
from console.config_models import HostConfig, ServerProfile
from console.errors import TransportError
from console.server.discovery import FlagDiscovery
from console.server.events import CommandShown, LifecycleEvent
from console.server.lifecycle import LifecycleError, ServerLifecycle
from tests.support.host_fixtures import make_user_transport
from tests.support.sshd import SshUser

BIG = "x" * 150_000


@pytest.mark.sshd
async def test_lifecycle_refuses_an_oversize_value_before_touching_the_host(
    ssh_user: Callable[..., SshUser], tmp_path: Path
) -> None:
    user = ssh_user("bash")
    host = HostConfig(name="big", address="127.0.0.1", port=user.port, user=user.user,
                      run_dir="~/.plateau-oversize")
    transport = make_user_transport(user)
    await transport.connect()
    # a profile edited at run time (flags editor) skips the config file's validators
    base = ServerProfile(model_path="m", launch=["python3", "-m", "sglang.launch_server"])
    profile = ServerProfile.model_construct(
        **{**base.__dict__, "flags": {"served-model-name": "x\\", "crash-dump-folder": BIG}}
    )
    events: list[LifecycleEvent] = []
    life = ServerLifecycle(transport, host,
                           discovery=FlagDiscovery(transport, host, cache_dir=tmp_path))
    try:
        with pytest.raises(LifecycleError) as raised:
            await life.start("big", profile, events.append)
        # nothing was prepared or launched (the host-wide lease may have made the run dir)
        run_dir = user.home / ".plateau-oversize"
        assert not (run_dir / "logs").exists() and not (run_dir / "server.json").exists()
    finally:
        await transport.close()
        shutil.rmtree(user.home / ".plateau-oversize", ignore_errors=True)
    message = str(raised.value)
    assert "flags.crash-dump-folder is 146 KiB long" in message and len(message) < 500
    assert not any(isinstance(event, CommandShown) for event in events)


@pytest.mark.sshd
async def test_transport_refuses_a_command_too_long_for_one_exec(
    ssh_user: Callable[..., SshUser],
) -> None:
    transport = make_user_transport(ssh_user("bash"))
    await transport.connect()
    try:
        with pytest.raises(TransportError, match="command too long") as raised:
            await transport.run(["printf", "%s", BIG])
        assert len(str(raised.value)) < 500
        # and the connection is still fine afterwards
        assert (await transport.run(["printf", "%s", "ok"])).stdout == "ok"
    finally:
        await transport.close()


def test_config_check_names_the_oversize_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'[profiles.big]\nmodel_path = "m"\n[profiles.big.env]\nX = "{BIG}"\n')
    assert main(["config", "check", str(config)]) != 0
    err = capsys.readouterr().err
    assert "profiles.big" in err and "env.X is 146 KiB long" in err
    assert err.count("\n") == 1 and len(err) < 500
