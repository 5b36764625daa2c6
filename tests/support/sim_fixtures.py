"""Fixtures that run the simulated SGLang server as a real subprocess.

    def test_x(sim_server):              # one default instance (function scope)
        httpx.get(f"{sim_server.base_url}/v1/models")

    def test_y(sim_factory):
        sim = sim_factory("--enable-metrics", "--tp", "8", ready=True)
        sim.log_text()                     # stdout+stderr so far
        sim.stop()                         # SIGTERM + wait; returns the exit code

`sim_factory(*extra_flags, ready=True, timeout=20, env=None, model_path="test-model",
startup_seconds=0)` starts `python -m console.sim --model-path test-model --port <free>
--sim-startup-seconds 0 --sim-state-file <tmp>/gpu-state.json <extra flags>` with stdout and
stderr both appended to `<tmp_path>/sim-<port>.log`, waits for `GET /ready` == 200 (when
`ready=True`), and returns a `SimProcess`. Every process still alive at teardown gets SIGTERM,
then SIGKILL after 10 s.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
READY_LINE = "The server is fired up and ready to roll!"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class SimProcess:
    process: subprocess.Popen[bytes]
    port: int
    log_path: Path
    state_file: Path
    argv: list[str] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.process.pid

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def is_ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.base_url}/ready", timeout=1) as resp:
                return bool(resp.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def wait_ready(self, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"sim exited with {self.process.returncode} before ready:\n{self.log_text()}"
                )
            if self.is_ready():
                return
            time.sleep(0.05)
        raise TimeoutError(f"sim not ready after {timeout}s:\n{self.log_text()}")

    def wait_exit(self, timeout: float = 20.0) -> int:
        return self.process.wait(timeout=timeout)

    def stop(self, timeout: float = 20.0) -> int:
        """SIGTERM (SGLang's graceful drain), wait, SIGKILL if it hangs. Returns the code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        return int(self.process.returncode)


SimFactory = Callable[..., SimProcess]


@pytest.fixture
def sim_factory(tmp_path: Path) -> Iterator[SimFactory]:
    started: list[SimProcess] = []

    def start(
        *extra: str,
        ready: bool = True,
        timeout: float = 20.0,
        env: dict[str, str] | None = None,
        model_path: str = "test-model",
        startup_seconds: float = 0.0,
    ) -> SimProcess:
        port = free_port()
        log_path = tmp_path / f"sim-{port}.log"
        state_file = tmp_path / f"gpu-state-{port}.json"
        argv = [
            sys.executable, "-m", "console.sim",
            "--model-path", model_path,
            "--port", str(port),
            "--sim-startup-seconds", str(startup_seconds),
            "--sim-state-file", str(state_file),
            *extra,
        ]
        full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        full_env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(REPO_ROOT), full_env.get("PYTHONPATH", "")) if p
        )
        with log_path.open("ab") as log:
            process = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                cwd=REPO_ROOT, env=full_env,
            )
        sim = SimProcess(process=process, port=port, log_path=log_path, state_file=state_file,
                         argv=argv)
        started.append(sim)
        if ready:
            sim.wait_ready(timeout)
        return sim

    yield start
    for sim in started:
        if sim.process.poll() is None:
            sim.stop(timeout=10)


@pytest.fixture
def sim_server(sim_factory: SimFactory) -> SimProcess:
    """One default simulated server (fast startup), ready to serve."""
    return sim_factory()
