"""Process control shared by both transports: each is one constant script run through
the transport's own `run`, so local and SSH hosts behave identically."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from console.errors import TransportError
from console.host import scripts
from console.host.transport import CommandResult, DetachedProcess
from console.text import sanitize


class ProcessOps:
    """Mixin: needs `host_name`, `run(argv, timeout=...)` and `home_dir()`; call
    `_init_programs(run_dir)` from `__init__`."""

    _program_root: str | None
    _programs: dict[str, str]

    @property
    def host_name(self) -> str:
        raise NotImplementedError  # each transport names its host

    def _init_programs(self, run_dir: str | None) -> None:
        self._program_root = None if run_dir is None else (run_dir.rstrip("/") or "/")
        self._programs = {}  # sha256 -> verified path on the host (this connection)

    async def _program_directory(self) -> str:
        return await self.resolve_path(f"{self._program_root}/bin")

    def _forget_programs(self) -> None:
        """A new connection verifies every program again before its first use."""
        self._programs = {}

    async def install_program(self, name: str, source: str) -> str:
        """The host path of a verified copy of SOURCE, `<run_dir>/bin/NAME-<sha256>.py`.

        Host-side programs run as `python3 PATH ARGS`, which stays short in the host's `ps`
        and `top` (not `python3 -c <KB of source>`). The copy is content-addressed, written
        atomically and checked against the hash on the first use per connection."""
        data = source.encode("utf-8")
        digest = hashlib.sha256(data).hexdigest()
        known = self._programs.get(digest)
        if known is not None:
            return known
        directory = await self._program_directory()
        path = f"{directory}/{name}-{digest[:16]}.py"
        result = await self._install(directory, path, digest, source)
        if not result.ok or result.stdout.strip() not in ("ok", "installed"):
            detail = (result.stderr.strip() or result.stdout.strip())[-300:]
            raise TransportError(
                f"{self.host_name}: cannot install {name} in {directory}: "
                f"{sanitize(detail) or f'exit {result.exit_status}'}"
            )
        self._programs[digest] = path
        return path

    async def _install(self, directory: str, path: str, digest: str,
                       source: str) -> CommandResult:
        """scripts.INSTALL_PROGRAM through `run`; a transport may do the same more cheaply."""
        return await self.run(scripts.sh(scripts.INSTALL_PROGRAM, directory, path, digest),
                              input=source, timeout=60)

    async def run(
        self, argv: Sequence[str], *, input: str | None = None, timeout: float | None = 60.0,
        env: Mapping[str, str] | None = None,
    ) -> CommandResult:
        raise NotImplementedError

    async def start_detached(
        self,
        argv: Sequence[str],
        *,
        log_path: str,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> DetachedProcess:
        command = scripts.with_cwd(scripts.with_env(argv, env), cwd)
        result = await self.run(scripts.sh(scripts.DETACH, log_path, *command), timeout=30)
        lines = result.stdout.strip().splitlines()
        if not result.ok or not lines or not lines[-1].isdigit():
            detail = sanitize(result.stderr.strip() or result.stdout.strip())
            raise TransportError(f"{self.host_name}: could not start detached process: {detail}")
        pid = int(lines[-1])
        return DetachedProcess(pid=pid, pgid=pid, log_path=log_path)

    async def home_dir(self) -> str:
        raise NotImplementedError

    async def resolve_path(self, path: str) -> str:
        """PATH with a leading `~` replaced by the host's home directory."""
        if not path.startswith("~"):
            return path
        return scripts.resolve_home(path, await self.home_dir())

    async def signal_group(self, pgid: int, signal_name: str) -> bool:
        result = await self.run(scripts.signal_argv(pgid, signal_name), timeout=10)
        return result.ok

    async def is_alive(self, pid: int) -> bool:
        result = await self.run(scripts.sh(scripts.IS_ALIVE, str(int(pid))), timeout=10)
        return result.ok
