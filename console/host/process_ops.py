"""Process control shared by both transports: each is one constant script run through
the transport's own `run`, so local and SSH hosts behave identically."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from console.errors import TransportError
from console.host import scripts
from console.host.transport import CommandResult, DetachedProcess


class ProcessOps:
    """Mixin: needs `host_name` and `run(argv, timeout=...)`."""

    host_name: str

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
            detail = result.stderr.strip() or result.stdout.strip()
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
