"""SshTransport: one asyncssh connection per host, shared by every channel.

- Session channels are capped below OpenSSH's default MaxSessions (10); port forwards are
  direct-tcpip channels and do not count.
- Streams run under a stdin-EOF watchdog: closing our side kills the remote process group
  (closing a channel alone does not, and SSH signals are refused for root logins).
- After a drop the connection is re-established with backoff; callers see events.
- Every exec request is the fixed bootstrap of `scripts.command_line`, so the user's login
  shell (bash, dash, zsh, fish, tcsh, ...) never parses an argument. Each new connection is
  probed once: the probe proves the bootstrap works there (clear error if not) and learns the
  home directory, which resolves `~` in host paths (`resolve_path`).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import signal
import weakref
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import asyncssh

from console import aio
from console.errors import HostKeyError, TransportError
from console.host import scripts
from console.host.ciphers import encryption_preference
from console.host.hostd_client import (
    HelperGone,
    HelperResult,
    HelperStream,
    HelperUnavailable,
    HostHelper,
)
from console.host.hostkeys import VerifyingClient, match_known_hosts
from console.host.process_ops import ProcessOps
from console.host.relay import LocalSide, RemoteSide
from console.host.transport import CommandResult, ConnectionEvent, PortForward
from console.text import sanitize

MAX_SESSIONS = 8  # OpenSSH allows 10 per connection; keep headroom for an SFTP or a human.


class SshLineStream:
    def __init__(self, process: asyncssh.SSHClientProcess[str], release: Callable[[], None]):
        self._process = process
        self._release = release
        self._closed = False

    @property
    def exit_status(self) -> int | None:
        return self._process.exit_status

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        before_mark: list[str] | None = []  # login-script output, until scripts.OUTPUT_MARK
        try:
            while True:
                line = await self._process.stdout.readline()
                if not line:  # EOF ("" never stands for an empty line, which is "\n")
                    break
                line = line.removesuffix("\n")
                if before_mark is not None:
                    if scripts.OUTPUT_MARK in line:
                        before_mark = None
                    elif len(before_mark) < 1000:
                        before_mark.append(line)
                    continue
                yield line
            for line in before_mark or ():  # no mark came: nothing was login noise
                yield line
            # EOF may come before the exit status: wait for it, so that `exit_status` tells
            # a command that ended (a number) from a channel that was cut (None)
            with contextlib.suppress(TimeoutError, asyncssh.Error, OSError):
                await aio.wait_for(self._process.wait_closed(), 5)
        except (asyncssh.Error, OSError) as exc:
            raise TransportError(f"stream broke: {exc}") from None

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            # EOF on stdin triggers the remote watchdog, which kills the process group.
            self._process.stdin.write_eof()
            await aio.wait_for(self._process.wait_closed(), 5)
        except (TimeoutError, asyncssh.Error, OSError, BrokenPipeError):
            pass
        finally:
            self._process.close()
            self._release()

    async def __aenter__(self) -> SshLineStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class SshPortForward:
    """A local listener; each accepted socket gets a direct-tcpip channel on the *current*
    connection, so the forward keeps working across reconnects. The bytes are relayed by
    protocols wired to each other (console/host/relay.py), not by coroutines."""

    def __init__(self, transport: SshTransport, remote_port: int) -> None:
        self._transport = transport
        self._remote_port = remote_port
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._sides: weakref.WeakSet[LocalSide] = weakref.WeakSet()  # the open sockets

    async def start(self, listen_port: int = 0, reuse_port: bool = False) -> SshPortForward:
        """`reuse_port`: several processes may listen on the same port (SO_REUSEPORT; the
        kernel spreads the connections over them and only lets this user's sockets join)."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            self._new_side, "127.0.0.1", listen_port, reuse_port=reuse_port or None)
        return self

    @property
    def local_port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    def _new_side(self) -> LocalSide:
        side = LocalSide(self._open_channel, self._tasks)
        self._sides.add(side)
        return side

    async def _open_channel(self, remote: RemoteSide) -> object:
        connection = await self._transport.connection()
        return await connection.create_connection(
            lambda: remote, "127.0.0.1", self._remote_port, encoding=None)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            for task in list(self._tasks):
                task.cancel()
            for side in list(self._sides):
                side.close()
            self._sides.clear()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()


class SshTransport(ProcessOps):
    def __init__(
        self,
        host_name: str,
        address: str,
        *,
        port: int = 22,
        username: str | None = None,
        identity_files: Sequence[str] = (),
        known_hosts: Path | None = None,
        policy: Literal["strict", "accept-new"] = "strict",
        accept_fingerprint: str | None = None,
        jump_host: str | None = None,
        use_ssh_config: bool = True,
        connect_timeout: float = 10.0,
        keepalive_interval: float = 15.0,
        max_reconnect_delay: float = 30.0,
        reconnect_attempts: int = 8,
        run_dir: str = "~/.plateau",
        python: str = "python3",
    ) -> None:
        self._init_programs(run_dir)
        self._python = python
        # The command helper of the current connection (hostd_client.py): commands and streams
        # without a login shell each; None runs one exec channel per command.
        self._helper: HostHelper | None = None
        self.helper_note = ""  # why there is no helper (said in the "connected" event)
        self._host_name = host_name
        self._address = address
        self._port = port
        self._username = username
        self._identity_files = [str(Path(p).expanduser()) for p in identity_files]
        self._known_hosts = known_hosts or Path("~/.ssh/known_hosts").expanduser()
        self._policy = policy
        self._accept_fingerprint = accept_fingerprint
        self._jump_host = jump_host
        self._use_ssh_config = use_ssh_config
        self._connect_timeout = connect_timeout
        self._keepalive_interval = keepalive_interval
        self._max_reconnect_delay = max_reconnect_delay
        self._reconnect_attempts = reconnect_attempts
        self._conn: asyncssh.SSHClientConnection | None = None
        self._connect_lock = asyncio.Lock()
        self._sessions = asyncio.Semaphore(MAX_SESSIONS)
        self._subscribers: list[Callable[[ConnectionEvent], None]] = []
        self._closing = False
        self._ever_connected = False
        self._reconnect_task: asyncio.Task[None] | None = None
        self._home: str | None = None  # the host's home directory, from the connection probe
        self._jump: asyncssh.SSHClientConnection | None = None  # the last hop to the host

    @property
    def host_name(self) -> str:
        return self._host_name

    def subscribe(self, callback: Callable[[ConnectionEvent], None]) -> None:
        self._subscribers.append(callback)

    def _emit(self, kind: str, detail: str = "") -> None:
        event = ConnectionEvent(self._host_name, kind, detail)  # type: ignore[arg-type]
        for callback in list(self._subscribers):
            callback(event)

    # -- connection management -------------------------------------------------------------

    async def connect(self) -> None:
        await self.connection()

    async def connection(self) -> asyncssh.SSHClientConnection:
        """The live connection, reconnecting (with backoff) if it dropped."""
        if self._conn is not None and not self._conn.is_closed():
            return self._conn
        async with self._connect_lock:
            if self._conn is not None and not self._conn.is_closed():
                return self._conn
            if self._closing:
                raise TransportError(f"{self._host_name}: transport is closed")
            if not self._ever_connected:
                self._conn = await self._open_probed()
                self._ever_connected = True
                note = f" ({self.helper_note})" if self.helper_note else ""
                self._emit("connected", f"{self._address}:{self._port}{note}")
            else:
                self._conn = await self._reconnect_with_backoff()
            return self._conn

    async def _open_probed(self) -> asyncssh.SSHClientConnection:
        """A new connection whose bootstrap probe passed (closed again if it did not).

        The command helper's hello is the probe (one login shell instead of two); without a
        helper the plain probe runs, and its error is the one the operator sees."""
        connection = await self._open()
        try:
            await self._start_helper(connection)
            if self._helper is None:
                self._home = await self._probe(connection)
        except BaseException:
            connection.close()
            raise
        return connection

    async def _start_helper(self, connection: asyncssh.SSHClientConnection) -> None:
        old, self._helper = self._helper, None
        if old is not None:
            await old.close()
        try:
            helper = await HostHelper.start(connection, self._python, self._host_name,
                                            self._connect_timeout * 3)
        except HelperUnavailable as exc:
            self.helper_note = (f"no command helper ({self._python}: {exc}): one SSH channel, "
                                "and one login shell, per command")
            return
        self._forget_programs()
        self._helper, self._home, self.helper_note = helper, helper.home, ""

    async def _live_helper(self) -> HostHelper | None:
        """The helper for the live connection (reconnecting first if it dropped), or None."""
        await self.connection()
        helper = self._helper
        return helper if helper is not None and helper.alive else None

    async def _probe(self, connection: asyncssh.SSHClientConnection) -> str:
        """Run the bootstrap once on a fresh connection; its answer is the home directory."""
        try:
            result = await connection.run(
                scripts.command_line(scripts.sh(scripts.PROBE)), check=False,
                timeout=self._connect_timeout * 3, errors="replace",
            )
        except (asyncssh.Error, OSError) as exc:
            raise TransportError(f"{self._host_name}: cannot run commands: {exc}") from None
        self._forget_programs()
        home = scripts.parse_probe(scripts.after_mark(_text(result.stdout)))
        if result.exit_status != 0 or home is None:
            detail = " ".join(_text(result.stderr).split())[:300] or f"exit {result.exit_status}"
            raise TransportError(
                f"{self._host_name}: cannot run remote commands: {scripts.BOOTSTRAP_NEEDS} "
                f"(the host said: {sanitize(detail)})"
            )
        return home

    async def home_dir(self) -> str:
        """The login user's home directory on the host (absolute)."""
        await self.connection()
        assert self._home is not None
        return self._home

    async def _reconnect_with_backoff(self) -> asyncssh.SSHClientConnection:
        delay = 0.5
        last_error: Exception | None = None
        for attempt in range(1, self._reconnect_attempts + 1):
            self._emit("reconnecting", f"attempt {attempt}")
            try:
                connection = await self._open_probed()
            except HostKeyError:
                raise
            except TransportError as exc:
                last_error = exc
                await asyncio.sleep(delay * (1 + random.random() * 0.2))
                delay = min(delay * 2, self._max_reconnect_delay)
                continue
            self._emit("reconnected", f"after {attempt} attempt(s)")
            return connection
        self._emit("failed", str(last_error))
        raise TransportError(f"{self._host_name}: reconnect failed: {last_error}")

    def _on_connection_lost(self, exc: Exception | None) -> None:
        if self._closing:
            return
        self._emit("lost", str(exc) if exc else "connection closed")
        loop = asyncio.get_event_loop()
        if self._reconnect_task is None or self._reconnect_task.done():
            self._reconnect_task = loop.create_task(self._background_reconnect())

    async def _background_reconnect(self) -> None:
        with contextlib.suppress(TransportError):
            await self.connection()

    async def _open(self) -> asyncssh.SSHClientConnection:
        client = VerifyingClient(
            host=self._address,
            port=self._port,
            known_hosts=self._known_hosts,
            policy=self._policy,
            accept_fingerprint=self._accept_fingerprint,
            on_lost=self._on_connection_lost,
        )
        tunnel = await self._open_jump() if self._jump_host else None
        options: dict[str, object] = {
            "port": self._port,
            "known_hosts": self._trusted_keys(),  # after the jump (it may add a line)
            "connect_timeout": self._connect_timeout,
            "keepalive_interval": self._keepalive_interval,
            "keepalive_count_max": 3,
        }
        if not self._use_ssh_config:
            options["config"] = None
        ciphers = encryption_preference(self._use_ssh_config)
        if ciphers is not None:
            options["encryption_algs"] = ciphers
        if self._username:
            options["username"] = self._username
        if self._identity_files:
            options["client_keys"] = self._identity_files
        if tunnel is not None:
            options["tunnel"] = tunnel
        try:
            connection, _ = await asyncssh.create_connection(
                lambda: client, self._address, **options  # type: ignore[arg-type]
            )
        except asyncssh.HostKeyNotVerifiable as exc:
            problem = client.problem
            raise HostKeyError(problem.message() if problem else str(exc), problem) from None
        except asyncssh.PermissionDenied as exc:
            raise TransportError(
                f"{self._host_name}: authentication failed for "
                f"{self._username or 'default user'}@{self._address}:{self._port} ({exc.reason})"
            ) from None
        except (OSError, asyncssh.Error, TimeoutError) as exc:
            reason = str(exc) or type(exc).__name__
            raise TransportError(
                f"{self._host_name}: cannot connect to {self._address}:{self._port}: {reason}"
            ) from None
        return connection

    async def _open_jump(self) -> asyncssh.SSHClientConnection:
        """The jump host's connection, its key checked like the host's: the same
        known_hosts file, policy and accepted fingerprint, the same refusal (asyncssh's own
        tunnel would check it against ~/.ssh/known_hosts alone, without a fingerprint)."""
        assert self._jump_host is not None
        if self._jump is not None:
            self._jump.close()
            self._jump = None
        previous: asyncssh.SSHClientConnection | None = None
        for hop in self._jump_host.split(","):
            user, address, port = parse_jump(hop)
            hop_client = VerifyingClient(
                host=address, port=port, known_hosts=self._known_hosts, policy=self._policy,
                accept_fingerprint=self._accept_fingerprint, role="jump host ",
            )
            options: dict[str, object] = {
                "port": port,
                "known_hosts": match_known_hosts(self._known_hosts, address,
                                                 port).for_asyncssh(),
                "connect_timeout": self._connect_timeout,
                "keepalive_interval": self._keepalive_interval,
                "keepalive_count_max": 3,
            }
            if not self._use_ssh_config:
                options["config"] = None
            if user:
                options["username"] = user
            if self._identity_files:
                options["client_keys"] = [*self._identity_files, *_default_keys()]
            if previous is not None:
                options["tunnel"] = previous
            try:
                previous, _ = await asyncssh.create_connection(
                    lambda c=hop_client: c, address, **options  # type: ignore[misc, arg-type]
                )
            except asyncssh.HostKeyNotVerifiable as exc:
                problem = hop_client.problem
                raise HostKeyError(problem.message() if problem else str(exc), problem) from None
            except (OSError, asyncssh.Error, TimeoutError) as exc:
                reason = str(exc) or type(exc).__name__
                raise TransportError(f"{self._host_name}: cannot connect to the jump host "
                                     f"{sanitize(hop)}: {reason}") from None
        assert previous is not None
        self._jump = previous
        return previous

    def _trusted_keys(self) -> object:
        # Matched here, as OpenSSH does (asyncssh's own matcher retries a non-22 port
        # without the port and then forgets @revoked entries).
        return match_known_hosts(self._known_hosts, self._address, self._port).for_asyncssh()

    async def close(self) -> None:
        self._closing = True
        if self._reconnect_task is not None:
            self._reconnect_task.cancel()
        if self._helper is not None:
            await self._helper.close()
        if self._conn is not None:
            self._conn.close()
            with contextlib.suppress(Exception):
                await self._conn.wait_closed()
        if self._jump is not None:
            self._jump.close()
        self._emit("closed")

    # -- commands --------------------------------------------------------------------------

    async def run(
        self,
        argv: Sequence[str],
        *,
        input: str | None = None,
        timeout: float | None = 60.0,
        env: Mapping[str, str] | None = None,
    ) -> CommandResult:
        full = scripts.with_env(argv, env)
        command = self._command(full)  # the same limit whichever way it goes
        helper = await self._live_helper()
        if helper is not None:
            done = await self._helper_run(helper, full, input, timeout, argv)
            return CommandResult(tuple(argv), done.exit_status, _text(done.stdout),
                                 _text(done.stderr))
        async with self._sessions:
            connection = await self.connection()
            try:
                result = await connection.run(
                    command, input=input, check=False, timeout=timeout, errors="replace"
                )
            except asyncssh.TimeoutError:
                raise TransportError(
                    f"{self._host_name}: command timed out after {timeout} s: "
                    f"{scripts.display(argv)[:200]}"
                ) from None
            except (asyncssh.Error, OSError) as exc:
                raise TransportError(f"{self._host_name}: command failed: {exc}") from None
        return CommandResult(
            tuple(argv), self._exit_status(result, argv),
            scripts.after_mark(_text(result.stdout)), _text(result.stderr),
        )

    async def _install(self, directory: str, path: str, digest: str,
                       source: str) -> CommandResult:
        """Through the helper when there is one: 3 programs per connection were 15 processes."""
        helper = await self._live_helper()
        if helper is None:
            return await super()._install(directory, path, digest, source)
        argv = ("install", path)
        try:
            done = await helper.install(directory, path, digest, source.encode("utf-8"))
        except (TimeoutError, HelperGone) as exc:
            raise TransportError(f"{self._host_name}: cannot install {path}: {exc}") from None
        return CommandResult(argv, done.exit_status, _text(done.stdout), _text(done.stderr))

    def _our_program(self, argv: Sequence[str]) -> bool:
        """`PYTHON PROGRAM ...` where PYTHON runs the helper and PROGRAM is one of ours, verified
        on this connection (install_program): the helper forks it instead of starting an
        interpreter."""
        return (len(argv) >= 2 and argv[0] == self._python
                and argv[1] in self._programs.values())

    async def _helper_run(self, helper: HostHelper, full: Sequence[str], data: str | bytes | None,
                          timeout: float | None, argv: Sequence[str]) -> HelperResult:
        stdin = data.encode("utf-8") if isinstance(data, str) else data
        try:
            return await helper.run(full, stdin, timeout, program=self._our_program(full))
        except TimeoutError:
            raise TransportError(
                f"{self._host_name}: command timed out after {timeout} s: "
                f"{scripts.display(argv)[:200]}"
            ) from None
        except HelperGone as exc:
            raise TransportError(
                f"{self._host_name}: connection lost while running "
                f"{scripts.display(argv)[:200]} ({exc})"
            ) from None

    def _exit_status(self, result: asyncssh.SSHCompletedProcess, argv: Sequence[str]) -> int:
        """The command's status as a shell reports it (128 + N for signal N). A channel that
        closed with neither a status nor a signal was cut (the connection dropped or sshd
        ended the session): that is the transport's failure, not the command's."""
        if result.exit_status is not None and result.exit_status >= 0:
            return result.exit_status
        if result.exit_signal:
            name = str(result.exit_signal[0])
            try:
                return 128 + signal.Signals[f"SIG{name}"].value
            except KeyError:
                return 128 + signal.SIGTERM.value  # a signal this system has no number for
        raise TransportError(
            f"{self._host_name}: connection lost while running "
            f"{scripts.display(argv)[:200]} (no exit status came back)"
        )

    async def stream_lines(
        self, argv: Sequence[str], *, env: Mapping[str, str] | None = None
    ) -> SshLineStream | HelperStream:
        helper = await self._live_helper()
        if helper is not None:
            full = scripts.with_env(argv, env)
            self._command(full)
            try:
                # never forked: a long-lived program must show as itself in the host's `ps`
                return helper.stream(full)
            except HelperGone as exc:
                raise TransportError(f"{self._host_name}: cannot start stream: {exc}") from None
        command = self._command(scripts.sh(scripts.WATCHDOG, *scripts.with_env(argv, env)))
        await self._sessions.acquire()
        try:
            connection = await self.connection()
            process = await connection.create_process(
                command, errors="replace", stderr=asyncssh.DEVNULL
            )
        except (asyncssh.Error, OSError) as exc:
            self._sessions.release()
            raise TransportError(f"{self._host_name}: cannot start stream: {exc}") from None
        except BaseException:
            self._sessions.release()
            raise
        return SshLineStream(process, self._sessions.release)

    async def read_file(self, path: str) -> bytes:
        helper = await self._live_helper()
        if helper is not None:
            read = await self._helper_run(helper, ["cat", "--", path], None, 60.0,
                                          ["cat", "--", path])
            if read.exit_status != 0:
                detail = sanitize(_text(read.stderr).strip())
                raise TransportError(f"{self._host_name}: cannot read {path}: {detail}")
            return read.stdout
        async with self._sessions:
            connection = await self.connection()
            try:
                result = await connection.run(
                    self._command(["cat", "--", path]), encoding=None, check=False
                )
            except (asyncssh.Error, OSError) as exc:
                raise TransportError(f"{self._host_name}: cannot read {path}: {exc}") from None
        if result.exit_status != 0:
            detail = sanitize(_text(result.stderr).strip())
            raise TransportError(f"{self._host_name}: cannot read {path}: {detail}")
        out = result.stdout or b""
        data = out if isinstance(out, bytes) else out.encode("utf-8", "surrogateescape")
        return scripts.after_mark_bytes(data)

    async def write_file(self, path: str, data: bytes, *, mode: int = 0o644) -> None:
        argv = scripts.sh(scripts.WRITE_FILE, path, f"{mode:o}")
        command = self._command(argv)
        helper = await self._live_helper()
        if helper is not None:
            written = await self._helper_run(helper, argv, data, 60.0, argv)
            if written.exit_status != 0:
                detail = sanitize(_text(written.stderr).strip())
                raise TransportError(f"{self._host_name}: cannot write {path}: {detail}")
            return
        async with self._sessions:
            connection = await self.connection()
            try:
                result = await connection.run(command, input=data, encoding=None, check=False)
            except (asyncssh.Error, OSError) as exc:
                raise TransportError(f"{self._host_name}: cannot write {path}: {exc}") from None
        if result.exit_status != 0:
            detail = sanitize(_text(result.stderr).strip())
            raise TransportError(f"{self._host_name}: cannot write {path}: {detail}")

    def _command(self, argv: Sequence[str]) -> str:
        try:
            return scripts.command_line(argv)
        except scripts.CommandTooLong as exc:
            raise TransportError(f"{self._host_name}: {exc}") from None

    async def forward_port(self, remote_port: int, listen_port: int = 0,
                           reuse_port: bool = False) -> SshPortForward:
        await self.connection()
        return await SshPortForward(self, remote_port).start(listen_port, reuse_port)

    async def load_forward_port(self, remote_port: int, relay: str = "python",
                                relays: int = 1) -> PortForward:
        """A forward for a sweep's load: relayed by child processes with their own
        connections (console/host/forward_proc.py), off this process's event loop.
        One relay is the default: on 16 cores four were no more accurate up to C=1024
        (bench_sweep_forward.py); one relay's ~55 µs per token fills a core only near
        18k streamed tokens a second."""
        from console.host.forward_proc import ProcessPortForward

        await self.connection()  # the host key is checked (and learnt) here first
        return await ProcessPortForward.start(self.options(), remote_port, relay, relays)

    def options(self) -> dict[str, object]:
        """This transport's constructor arguments, as JSON values (no secrets among them)."""
        return {
            "host_name": self._host_name, "address": self._address, "port": self._port,
            "username": self._username, "identity_files": list(self._identity_files),
            "known_hosts": str(self._known_hosts), "policy": self._policy,
            "accept_fingerprint": self._accept_fingerprint, "jump_host": self._jump_host,
            "use_ssh_config": self._use_ssh_config, "connect_timeout": self._connect_timeout,
            "keepalive_interval": self._keepalive_interval,
            "max_reconnect_delay": self._max_reconnect_delay,
            "reconnect_attempts": self._reconnect_attempts, "run_dir": self._program_root,
            "python": self._python,
        }  # fmt: skip


def parse_jump(hop: str) -> tuple[str, str, int]:
    """`[user@]host[:port]` (IPv6 as `[addr]:port`), as OpenSSH's -J takes it."""
    user, _, rest = hop.strip().rpartition("@")
    port = 22
    if rest.startswith("["):
        address, _, tail = rest[1:].partition("]")
        if tail.startswith(":") and tail[1:].isdigit():
            port = int(tail[1:])
    elif rest.count(":") == 1:
        address, _, number = rest.partition(":")
        port = int(number) if number.isdigit() else 22
    else:
        address = rest
    if not address or not 0 < port < 65536:
        raise TransportError(f"jump_host {sanitize(hop)!r}: expected [user@]host[:port]")
    return user, address, port


def _default_keys() -> list[str]:
    """OpenSSH's default identities that exist (a jump host may want one of them)."""
    home = Path("~/.ssh").expanduser()
    return [str(home / name) for name in ("id_ed25519", "id_ecdsa", "id_rsa")
            if (home / name).exists()]


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)
