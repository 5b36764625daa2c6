"""`--sim-ideal-procs N`: the ideal-timing simulator served from N processes on one port.

Not an SGLang behaviour (SGLang's HTTP front end is one process): a measurement instrument.
Issue 19 item 3 asks the sim not to be what limits a client benchmark; measured on a 16-core
machine (notes perf3.md, relay4.md "Items 3/4 on 16 cores"), one ideal-mode process at C=1024
sends its first tokens p50 0.41 ms but p99 31.8 ms late, and a profile puts ~41% of its CPU in
socket sends: one `send()` per stream per token, 1024 of them per lock-step burst, in one
process. Ideal mode has no shared scheduler state (each request's timing is fixed by
console.sim.engine.IdealEngine), so N processes, each with its own IdealEngine, listening on
the same port with SO_REUSEPORT (the kernel spreads connections over them), serve what one
would, with the sends spread over N cores.

Lifecycle: the parent forks N-1 children before its event loop starts; they block on a pipe.
The parent alone does the startup (log lines, GPU state file), binds the port, then writes
one byte per child: each child binds the same port and registers a private loopback admin
port in a temp dir the parent made; the parent waits for every registration before its
warmup and "fired up" line. The pipe stays open as a lifeline: however the parent ends
(SIGKILL included), the children read EOF and stop. The parent forwards SIGTERM (each child
drains its own requests) and waits for its children before exiting.

`GET /_sim/lateness`, answered by any process, merges every process's raw samples, fetched
from the siblings' admin ports (`/_sim/lateness/local`); `?reset=1` resets them all. Other
counters (/metrics, /server_info, the GPU state file: the parent's) are per process.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import tempfile
import time
from pathlib import Path

import aiohttp

REGISTER_TIMEOUT_S = 30.0
CHILD_EXIT_TIMEOUT_S = 30.0


def listen_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket (the loopback admin port: port 0, the kernel picks)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((host, port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


class ProcGroup:
    """The N processes of one sim: forking, start signal, registry of admin ports, stopping."""

    def __init__(self, procs: int) -> None:
        self.procs = procs
        self.dir = Path(tempfile.mkdtemp(prefix="plateau-sim-procs-"))
        self.children: list[int] = []
        self._go_r, self._go_w = os.pipe()
        self.parent_pid = os.getpid()

    @property
    def lifeline(self) -> int:
        """In a child: readable (EOF) once the parent is gone."""
        return self._go_r

    def fork_children(self) -> bool:
        """Fork N-1 children: True in a child (which then waits for `wait_go`), False in the
        parent. Call before any event loop exists."""
        for _ in range(self.procs - 1):
            pid = os.fork()
            if pid == 0:
                os.close(self._go_w)
                self.children = []
                return True
            self.children.append(pid)
        os.close(self._go_r)
        return False

    def wait_go(self) -> bool:
        """In a child: block until the parent is up (True) or gone (False)."""
        try:
            return os.read(self._go_r, 1) == b"g"
        except OSError:
            return False

    def go(self) -> None:
        """In the parent, once its port is bound: let the children bind theirs."""
        os.write(self._go_w, b"g" * len(self.children))

    def register(self, admin_port: int) -> None:
        tmp = self.dir / f".{os.getpid()}.tmp"
        tmp.write_text(str(admin_port), encoding="ascii")
        tmp.rename(self.dir / f"{os.getpid()}.port")

    def sibling_ports(self) -> list[int]:
        own = f"{os.getpid()}.port"
        ports = []
        for path in self.dir.glob("*.port"):
            if path.name != own:
                with contextlib.suppress(OSError, ValueError):
                    ports.append(int(path.read_text(encoding="ascii")))
        return ports

    async def wait_registered(self) -> bool:
        """In the parent: every process registered its admin port (False on timeout)."""
        deadline = time.monotonic() + REGISTER_TIMEOUT_S
        while len(list(self.dir.glob("*.port"))) < self.procs:
            if time.monotonic() > deadline or not self._alive():
                return False
            await asyncio.sleep(0.02)
        return True

    async def gather_lateness(self, reset: bool, authorization: str | None) -> list[bytes]:
        """Every sibling's raw lateness samples (console.sim.lateness.Lateness.raw)."""
        headers = {"Authorization": authorization} if authorization else {}
        query = "?reset=1" if reset else ""
        timeout = aiohttp.ClientTimeout(total=30)
        async with aiohttp.ClientSession(timeout=timeout, headers=headers) as session:

            async def one(port: int) -> bytes | None:
                url = f"http://127.0.0.1:{port}/_sim/lateness/local{query}"
                try:
                    async with session.get(url) as resp:
                        return await resp.read() if resp.status == 200 else None
                except (TimeoutError, aiohttp.ClientError, OSError):
                    return None  # a sibling that is gone has nothing to report

            found = await asyncio.gather(*(one(port) for port in self.sibling_ports()))
        return [raw for raw in found if raw is not None]

    def signal_children(self, signum: int) -> None:
        for pid in self.children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)

    def _alive(self) -> list[int]:
        alive = []
        for pid in self.children:
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                continue
            if done == 0:
                alive.append(pid)
        self.children = alive
        return alive

    async def stop(self) -> None:
        """In the parent: SIGTERM the children, wait for them (SIGKILL after a timeout)."""
        self.signal_children(signal.SIGTERM)
        deadline = time.monotonic() + CHILD_EXIT_TIMEOUT_S
        while self._alive() and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        self.signal_children(signal.SIGKILL)
        self._alive()
        self.cleanup()

    def cleanup(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._go_w)
        shutil.rmtree(self.dir, ignore_errors=True)
