"""The native engine: a pool of worker processes that share a step's streams.

Above `streams_per_worker` concurrent streams the load is split across several processes
(one event loop each; about 20-25k SSE events/s is all one Python process can carry), so the
client is not the bottleneck it measures. The processes start once per sweep and stay up;
every step sends each worker its share and a common start instant on the shared monotonic
clock, then merges the records.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import secrets
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from multiprocessing.connection import Listener
from pathlib import Path
from typing import Any

from console.bench.metrics import RequestRecord
from console.bench.worker import Job
from console.bench.workload import Workload

DEFAULT_STREAMS_PER_WORKER = 128
WORKER_START_TIMEOUT_S = 60.0


def split(total: int, parts: int) -> list[int]:
    """`total` split into `parts` near-equal non-negative integers (larger ones first)."""
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity, e.g. under taskset or a cgroup cpuset), not
    the machine's count: more workers than that only take turns on the same cores."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def workers_for(concurrency: int, streams_per_worker: int, max_workers: int) -> int:
    return max(1, min(max_workers, math.ceil(concurrency / streams_per_worker)))


@dataclass
class _Worker:
    process: Any
    conn: Any


class WorkerPool:
    """Worker processes (`python -m console.bench.worker`), started lazily. They are fresh
    interpreters, never forks (the caller may be a threaded TUI), and unlike multiprocessing's
    spawn they do not re-import the caller's __main__."""

    def __init__(
        self,
        *,
        streams_per_worker: int = DEFAULT_STREAMS_PER_WORKER,
        max_workers: int | None = None,
    ) -> None:
        self.streams_per_worker = streams_per_worker
        self.max_workers = max_workers or usable_cpus()
        self._workers: list[_Worker] = []
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._listener: Listener | None = None
        self._key = secrets.token_bytes(16)
        self.last_health: tuple[float, float] = (0.0, 0.0)

    def _drop_dead(self) -> None:
        """Forget workers whose process has exited (killed, crashed), so they are replaced."""
        alive = []
        for worker in self._workers:
            if worker.process.poll() is None:
                alive.append(worker)
            else:
                with contextlib.suppress(OSError):
                    worker.conn.close()
        self._workers = alive

    def _accept(self, process: subprocess.Popen[bytes]) -> Any:
        """The new worker's connection; an error (not a hang) if it dies before connecting."""
        assert self._listener is not None
        sock = getattr(getattr(self._listener, "_listener", None), "_socket", None)
        deadline = time.monotonic() + WORKER_START_TIMEOUT_S
        while sock is not None:
            ready, _, _ = select.select([sock], [], [], 0.2)
            if ready:
                break
            if process.poll() is not None:
                raise RuntimeError(
                    f"load worker exited with status {process.returncode} before it started"
                )
            if time.monotonic() > deadline:
                process.kill()
                process.wait()
                raise RuntimeError(
                    f"load worker did not start within {WORKER_START_TIMEOUT_S:g} s"
                )
        return self._listener.accept()

    def _ensure(self, count: int) -> None:
        self._drop_dead()
        if len(self._workers) >= count:
            return
        if self._listener is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="plateau-load-")
            address = os.path.join(self._tmp.name, "workers.sock")
            self._listener = Listener(address, family="AF_UNIX", authkey=self._key)
        env = {**os.environ, "PLATEAU_WORKER_KEY": self._key.hex()}
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
        while len(self._workers) < count:
            process = subprocess.Popen(
                [sys.executable, "-m", "console.bench.worker", str(self._listener.address)],
                env=env,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # a Ctrl-C in the terminal reaches the parent only
            )
            conn = self._accept(process)
            self._workers.append(_Worker(process, conn))

    def cancel(self) -> None:
        """Ask every worker to cut its in-flight requests off now (SIGUSR1)."""
        for worker in self._workers:
            with contextlib.suppress(ProcessLookupError):
                worker.process.send_signal(signal.SIGUSR1)

    async def run(
        self,
        base_url: str,
        workload: Workload,
        concurrency: int,
        *,
        prompts: int | None,
        seconds: float | None,
        timeout_s: float,
        seed: int,
        headers: Sequence[tuple[str, str]] = (),
        arrivals: Sequence[float] | None = None,
        cap: int | None = None,
    ) -> tuple[list[RequestRecord], tuple[int, int] | None, int]:
        """Run one step: closed loop at `concurrency`, or with `arrivals` (send times, s) an
        open loop of at most `cap` in flight, `concurrency` then being how many to expect in
        flight (it sets the worker count). Arrivals are dealt round-robin, so the workers
        together keep the schedule's process. Returns (records, time-box window or None,
        workers); `self.last_health` then holds (max CPU share, max loop-lag p99 ms)."""
        count = workers_for(concurrency, self.streams_per_worker, self.max_workers)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, self._ensure, count)
        streams = split(concurrency, count)
        shares = split(prompts, count) if prompts is not None else [None] * count
        dealt: list[tuple[float, ...] | None] = [None] * count
        if arrivals is not None:
            dealt = [tuple(arrivals[i::count]) for i in range(count)]
            streams = split(cap, count) if cap else [0] * count
            shares = [len(d or ()) for d in dealt]
        # Start together a little in the future, so each worker has its prompts ready.
        start_at = time.perf_counter_ns() + int((0.05 + 0.05 * count) * 1e9)
        deadline = start_at + int(seconds * 1e9) if seconds else None
        base = Job(
            base_url=base_url,
            workload=workload,
            streams=0,
            prompts=None,
            start_at_ns=start_at,
            deadline_ns=deadline,
            timeout_s=timeout_s,
            seed=seed,
            headers=tuple(headers),
        )
        active = []
        for index, worker in enumerate(self._workers[:count]):
            share = shares[index]
            if (streams[index] == 0 and arrivals is None) or share == 0:
                continue
            job = replace(base, streams=streams[index], prompts=share, seed=seed * 1009 + index,
                          part=index, parts=count, arrivals=dealt[index])
            try:
                worker.conn.send(job)
            except OSError as exc:  # died since _ensure: the step cannot run at this level
                self._drop_dead()
                raise RuntimeError(f"load worker lost before the step: {exc}") from None
            active.append(worker)
        replies = await asyncio.gather(
            *(loop.run_in_executor(None, _receive, w) for w in active), return_exceptions=True
        )
        records: list[RequestRecord] = []
        problems = []
        cpu, lag = 0.0, 0.0
        for reply in replies:
            if isinstance(reply, BaseException):
                problems.append(f"load worker lost mid-step ({type(reply).__name__})")
                continue
            status, payload = reply[0], reply[1]
            if status != "ok":
                problems.append(str(payload))
                continue
            records.extend(RequestRecord.from_tuple(item) for item in payload)
            cpu, lag = max(cpu, reply[2][0]), max(lag, reply[2][1])
        self.last_health = (cpu, lag)
        if problems:
            # A lost worker took its share of the streams with it: what the others measured
            # is a lower concurrency than the step's label, so the step fails (and the dead
            # worker is replaced before the next one).
            self._drop_dead()
            raise RuntimeError("; ".join(problems))
        return records, (start_at, deadline) if deadline else None, count

    def close(self) -> None:
        for worker in self._workers:
            with contextlib.suppress(OSError):
                worker.conn.send(None)
        for worker in self._workers:
            try:
                worker.process.wait(timeout=3)
            except subprocess.TimeoutExpired:
                worker.process.kill()
                worker.process.wait(timeout=2)
            worker.conn.close()
        self._workers.clear()
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _receive(worker: _Worker) -> Any:
    return worker.conn.recv()
