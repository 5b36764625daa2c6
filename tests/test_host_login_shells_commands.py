"""Remote commands are immune to the host's login shell (issue 12, item 1).

sshd hands every exec request to the user's login shell, whose quoting differs (fish reads
`\\'` inside single quotes as an escape). Each test logs in as a non-root user whose login shell
is bash, dash, zsh, fish or tcsh and checks that arguments arrive byte-exact through every
transport operation and that nothing in them runs: the marker file some values try to create
stays absent (its directory is world-writable, so a successful injection would show).
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from console.errors import TransportError
from console.host.ssh import SshTransport
from tests.support.host_fixtures import make_user_transport
from tests.support.sshd import LOGIN_SHELLS, SshUser

pytestmark = pytest.mark.sshd

# The case (fish: a value ending in a backslash, then a value carrying a command),
# and the classic traps for the other shells: POSIX, zsh `=cmd`, csh history `!`, fish `()`.
HOSTILE = [
    "x\\", "; touch {m} #", "'", "\\'", "\\\\'; touch {m}; '", '"', "$(touch {m})",
    "`touch {m}`", "(touch {m})", "\n touch {m}", "&& touch {m}", "| touch {m}", "> {m}",
    "=touch", "!touch", "!!", "~", "*", "{a,b}", "$HOME", "%self", "#", "", " ", "ä€😀",
]


@pytest.fixture(scope="module")
def marker_dir() -> Iterator[Path]:
    """A directory every test user may write to, so an injected `touch` would succeed."""
    directory = Path(tempfile.mkdtemp(prefix="plateau-markers-"))
    directory.chmod(0o1777)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def _fill(values: list[str], marker: Path) -> list[str]:
    return [value.replace("{m}", str(marker)) for value in values]


@pytest.fixture(params=LOGIN_SHELLS)
async def login(
    request: pytest.FixtureRequest, ssh_user: Callable[..., SshUser]
) -> AsyncIterator[tuple[SshUser, SshTransport]]:
    user = ssh_user(request.param)
    transport = make_user_transport(user)
    await transport.connect()
    yield user, transport
    await transport.close()


async def test_hostile_values_reach_every_operation_verbatim(
    login: tuple[SshUser, SshTransport], marker_dir: Path
) -> None:
    user, transport = login
    marker = marker_dir / f"pwned-{user.user}"
    values = _fill(HOSTILE, marker)
    home = str(user.home)

    # run (status, --help discovery): the argv comes back byte-exact, and env values are data
    result = await transport.run(
        ["sh", "-c", 'printf "%s\\0" "$@" "$PLATEAU_V"', "sh", *values],
        env={"PLATEAU_V": values[1]},
    )
    assert result.stdout.split("\0")[:-1] == [*values, values[1]]

    # start_detached (launch): argv, env and cwd arrive as given
    directory = f"{home}/plateau-test ; touch {marker} #"
    log = f"{directory}/x\\ $(touch {marker}).log"
    detached = await transport.start_detached(
        ["sh", "-c", 'printf "%s\\0" "$@"; pwd; exec sleep 60', "sh", *values], log_path=log,
        cwd=home, env={"PLATEAU_V": values[0]},
    )
    assert detached.pid > 1
    expected = ("\0".join(values) + "\0" + home + "\n").encode()
    assert await _eventually_read(transport, log, expected) == expected

    # write_file / read_file with a hostile path
    path = f"{directory}/\\'; touch {marker} #"
    await transport.write_file(path, b"data", mode=0o600)
    assert await transport.read_file(path) == b"data"

    # stream_lines (log follow, GPU agent)
    async with await transport.stream_lines(["printf", "%s\\n", *values[:3]]) as stream:
        lines = [line async for line in stream]
    assert lines == values[:3]

    # is_alive / signal_group (status, stop)
    assert await transport.is_alive(detached.pid)
    assert await transport.signal_group(detached.pgid, "TERM")
    for _ in range(200):
        if not await transport.is_alive(detached.pid):
            break
        await asyncio.sleep(0.05)
    assert not await transport.is_alive(detached.pid)
    await transport.run(["rm", "-rf", "--", directory])
    assert not marker.exists(), "a value was executed by the login shell"


async def _eventually_read(transport: SshTransport, path: str, expected: bytes) -> bytes:
    data = b""
    for _ in range(200):
        try:
            data = await transport.read_file(path)
        except TransportError:
            data = b""
        if data == expected:
            break
        await asyncio.sleep(0.05)
    return data


async def test_home_dir_comes_from_the_host(login: tuple[SshUser, SshTransport]) -> None:
    user, transport = login
    assert await transport.home_dir() == str(user.home) != str(Path.home())
    assert await transport.resolve_path("~/.plateau") == f"{user.home}/.plateau"
    assert await transport.resolve_path("/abs/~x") == "/abs/~x"


# Typed so mypy matches it to hypothesis's category names (a bare tuple reads as tuple[str]).
SURROGATES: tuple[Literal["Cs"]] = ("Cs",)

arguments = st.lists(
    st.one_of(
        st.text(st.characters(blacklist_categories=SURROGATES, blacklist_characters="\x00")),
        st.sampled_from(HOSTILE),
    ),
    min_size=1,
    max_size=4,
)


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    event_loop = asyncio.new_event_loop()
    yield event_loop
    event_loop.close()


@pytest.mark.parametrize("shell", LOGIN_SHELLS)
def test_arguments_round_trip_through_each_login_shell(
    shell: str, ssh_user: Callable[..., SshUser], marker_dir: Path,
    loop: asyncio.AbstractEventLoop,
) -> None:
    transport = make_user_transport(ssh_user(shell))
    marker = marker_dir / f"pwned-hypothesis-{shell}"

    @settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
    @given(arguments)
    def check(parts: list[str]) -> None:
        values = _fill(parts, marker)
        result = loop.run_until_complete(transport.run(["printf", "%s\\0", *values]))
        assert result.exit_status == 0, result.stderr
        assert result.stdout.split("\0")[:-1] == values
        assert not marker.exists(), "an argument was executed by the login shell"

    try:
        check()
    finally:
        loop.run_until_complete(transport.close())


async def test_a_host_without_the_bootstrap_tools_gets_one_clear_error(
    ssh_user: Callable[..., SshUser],
) -> None:
    user = ssh_user("zsh", tag="nopath")
    # zsh reads ~/.zshenv for every command: this login finds no sh and no base64 on PATH
    (user.home / ".zshenv").write_text("path=(/nonexistent)\n")
    transport = make_user_transport(user)
    with pytest.raises(TransportError, match=r"needs a POSIX `sh` and `base64`.*not found"):
        await transport.connect()
    await transport.close()
