"""Arbitrary strings as arguments come back byte-exact through both transports, with no
side effects: nothing a user types is ever parsed as shell."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from console.host import scripts
from console.host.local import LocalTransport
from console.host.ssh import SshTransport
from tests.support.host_fixtures import make_ssh_transport
from tests.support.sshd import Sshd

SHELL_TRAPS = [
    "'", '"', "$(touch {m})", "`touch {m}`", "; touch {m}", "\n touch {m}", "\\", "$HOME",
    "*", "~", "&& touch {m}", "| touch {m}", "> {m}", "${{IFS}}", "!!", "#", "ä€😀",
]

# Typed so mypy matches it to hypothesis's category names (a bare tuple reads as tuple[str]).
SURROGATES: tuple[Literal["Cs"]] = ("Cs",)

arguments = st.lists(
    st.one_of(
        st.text(st.characters(blacklist_categories=SURROGATES, blacklist_characters="\x00")),
        st.sampled_from(SHELL_TRAPS),
    ),
    min_size=1,
    max_size=4,
)


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    event_loop = asyncio.new_event_loop()
    yield event_loop
    event_loop.close()


def _check_round_trip(
    loop: asyncio.AbstractEventLoop, transport: LocalTransport | SshTransport, marker: Path,
    parts: list[str],
) -> None:
    values = [part.replace("{m}", str(marker)) for part in parts]
    result = loop.run_until_complete(transport.run(["printf", "%s\\0", *values]))
    assert result.exit_status == 0, result.stderr
    assert result.stdout.split("\x00")[:-1] == values
    assert not marker.exists(), "an argument was executed as shell"


@pytest.mark.slow
@pytest.mark.sshd
def test_arguments_round_trip_over_ssh(
    sshd: Sshd, tmp_path: Path, loop: asyncio.AbstractEventLoop
) -> None:
    transport = make_ssh_transport(sshd)
    marker = tmp_path / "pwned"

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(arguments)
    def check(parts: list[str]) -> None:
        _check_round_trip(loop, transport, marker, parts)

    try:
        check()
    finally:
        loop.run_until_complete(transport.close())


def test_arguments_round_trip_locally(tmp_path: Path, loop: asyncio.AbstractEventLoop) -> None:
    transport = LocalTransport()
    marker = tmp_path / "pwned"

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(arguments)
    def check(parts: list[str]) -> None:
        _check_round_trip(loop, transport, marker, parts)

    check()


def test_detach_and_env_values_are_data(tmp_path: Path, loop: asyncio.AbstractEventLoop) -> None:
    marker = tmp_path / "pwned"
    transport = LocalTransport()
    log = tmp_path / "x $(touch pwned).log"
    env = {"PLATEAU_V": f"$(touch {marker}); `touch {marker}`"}
    loop.run_until_complete(
        transport.start_detached(
            ["sh", "-c", 'printf "%s" "$PLATEAU_V"'], log_path=str(log), env=env
        )
    )
    for _ in range(100):
        if log.exists() and log.read_text():
            break
        loop.run_until_complete(asyncio.sleep(0.02))
    assert log.read_text() == env["PLATEAU_V"]
    assert not marker.exists()


def test_invalid_env_names_and_nul_rejected() -> None:
    with pytest.raises(ValueError):
        scripts.with_env(["true"], {"A;touch x": "1"})
    with pytest.raises(ValueError):
        scripts.command_line(["echo", "a\x00b"])
