"""LocalTransport: this machine, through asyncio subprocesses (the demo uses it)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import tempfile
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path

from console import aio
from console.errors import TransportError
from console.host import scripts
from console.host.process_ops import ProcessOps
from console.host.transport import CommandResult, ConnectionEvent

_STREAM_LIMIT = 8 * 1024 * 1024  # longest line we accept from a stream (SGLang lines can be huge)


class LocalLineStream:
    """Lines of a local subprocess running in its own process group."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self._process = process
        self._closed = False

    @property
    def exit_status(self) -> int | None:
        return self._process.returncode

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        assert self._process.stdout is not None
        while True:
            try:
                raw = await self._process.stdout.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                if exc.partial:
                    yield exc.partial.decode("utf-8", errors="replace")
                break
            except asyncio.LimitOverrunError as exc:
                raw = await self._process.stdout.readexactly(exc.consumed)
                yield raw.decode("utf-8", errors="replace")
                continue
            yield raw[:-1].decode("utf-8", errors="replace")
        await self._process.wait()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            await _terminate_group(self._process)
        finally:  # also when cancelled during the grace period (the console exiting)
            _kill_group_now(self._process)
            _release(self._process)

    async def __aenter__(self) -> LocalLineStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _release(process: asyncio.subprocess.Process) -> None:
    """Close the subprocess transport (its pipes) now, while the loop runs. Left to __del__,
    it closes after the loop has, and Python prints `RuntimeError: Event loop is closed`."""
    transport = getattr(process, "_transport", None)
    if transport is not None:
        transport.close()


def _kill_group_now(process: asyncio.subprocess.Process) -> None:
    """SIGKILL the command's process group without waiting (we are being cancelled)."""
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)


async def _terminate_group(process: asyncio.subprocess.Process, grace: float = 2.0) -> None:
    if process.returncode is not None:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            await aio.wait_for(process.wait(), grace)
            return
        except TimeoutError:
            continue


class LocalPortForward:
    """On this machine the host's port is already local: nothing to forward."""

    def __init__(self, port: int) -> None:
        self._port = port

    @property
    def local_port(self) -> int:
        return self._port

    async def close(self) -> None:
        return None


class LocalTransport(ProcessOps):
    """Runs everything on this machine. Same semantics as SshTransport."""

    def __init__(self, host_name: str = "localhost", *, run_dir: str | None = None) -> None:
        """RUN_DIR holds the host-side programs (`install_program`); without one (tests,
        one-off commands) they go to a private temp dir removed by `close`."""
        self._host_name = host_name
        self._temp_dir: str | None = None
        self._init_programs(run_dir)
        self._subscribers: list[Callable[[ConnectionEvent], None]] = []

    @property
    def host_name(self) -> str:
        return self._host_name

    def subscribe(self, callback: Callable[[ConnectionEvent], None]) -> None:
        self._subscribers.append(callback)

    async def connect(self) -> None:
        for callback in self._subscribers:
            callback(ConnectionEvent(self._host_name, "connected", "local"))

    async def close(self) -> None:
        if self._temp_dir is not None:  # programs already started have read their source
            shutil.rmtree(self._temp_dir, ignore_errors=True)
            self._temp_dir = None
            self._forget_programs()

    async def run(
        self,
        argv: Sequence[str],
        *,
        input: str | None = None,
        timeout: float | None = 60.0,
        env: Mapping[str, str] | None = None,
    ) -> CommandResult:
        full = scripts.with_env(argv, env)
        process = await self._spawn(full, stdin=asyncio.subprocess.PIPE if input else None)
        data = input.encode() if input is not None else None
        try:
            out, err = await aio.wait_for(process.communicate(data), timeout)
        except TimeoutError:
            await _terminate_group(process, grace=0.5)
            raise TransportError(f"{self._host_name}: command timed out after {timeout} s: "
                                 f"{scripts.display(argv)[:200]}") from None
        except BaseException:  # cancelled (the console is exiting): no command outlives us
            _kill_group_now(process)
            raise
        finally:
            _release(process)
        return CommandResult(
            tuple(argv),
            process.returncode if process.returncode is not None else -1,
            out.decode("utf-8", errors="replace"),
            err.decode("utf-8", errors="replace"),
        )

    async def _spawn(
        self, argv: Sequence[str], *, stdin: int | None = None, stderr: int | None = None
    ) -> asyncio.subprocess.Process:
        try:
            return await asyncio.create_subprocess_exec(
                *argv,
                stdin=stdin if stdin is not None else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr if stderr is not None else asyncio.subprocess.PIPE,
                start_new_session=True,
                limit=_STREAM_LIMIT,
            )
        except (FileNotFoundError, PermissionError) as exc:
            raise TransportError(f"{self._host_name}: cannot run {argv[0]!r}: {exc}") from None

    async def stream_lines(
        self, argv: Sequence[str], *, env: Mapping[str, str] | None = None
    ) -> LocalLineStream:
        process = await self._spawn(
            scripts.with_env(argv, env), stderr=asyncio.subprocess.DEVNULL
        )
        return LocalLineStream(process)

    async def _program_directory(self) -> str:
        if self._program_root is not None:
            return await super()._program_directory()
        if self._temp_dir is None:
            self._temp_dir = tempfile.mkdtemp(prefix="plateau-local-")
        return f"{self._temp_dir}/bin"

    async def home_dir(self) -> str:
        return os.path.expanduser("~")

    async def read_file(self, path: str) -> bytes:
        try:
            return await asyncio.to_thread(Path(path).expanduser().read_bytes)
        except OSError as exc:
            raise TransportError(f"{self._host_name}: cannot read {path}: {exc}") from None

    async def write_file(self, path: str, data: bytes, *, mode: int = 0o644) -> None:
        target = Path(path).expanduser()
        try:
            await asyncio.to_thread(_atomic_write, target, data, mode)
        except OSError as exc:
            raise TransportError(f"{self._host_name}: cannot write {path}: {exc}") from None

    async def forward_port(self, remote_port: int) -> LocalPortForward:
        return LocalPortForward(remote_port)


def _atomic_write(target: Path, data: bytes, mode: int) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f"{target.name}.plateau-tmp.{os.getpid()}")
    temporary.write_bytes(data)
    temporary.chmod(mode)
    temporary.replace(target)


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """True when nothing listens on host:port here (used by tests and the demo)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True
