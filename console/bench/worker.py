"""The load-generating worker: one process, one event loop.

Plain http:// (the server's own port or an SSH forward's): console.bench.h1, one keep-alive
connection per in-flight stream, HTTP/1.1, each chunk stamped with `perf_counter_ns()` inside
the loop's read callback and fed to an incremental parser (console.bench.sse) that keeps only
arrival times and token counts: no stream bytes outlive their event. Anything else (https://):
aiohttp (`TCPConnector(limit=0)`), the chunk stamped the moment `iter_any()` hands it over.
Closed loop: `streams` long-lived coroutines, each sending requests back to back. Open loop
(`arrivals`, console.bench.arrivals): each request is sent at its arrival time, whatever is
in flight, except that at most `streams` are (bench_serving's --max-concurrency semaphore,
taken before the request's clock starts, as `limited_request_func` does).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import random
import signal
import sys
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

import aiohttp

from console.bench.h1 import H1Client, HttpError, client_for
from console.bench.metrics import RequestRecord
from console.bench.sse import StreamParser
from console.bench.workload import PATHS, Prompt, PromptSource, Workload

_PARENT_PID = 0  # set in main(): the console process that started this worker


@dataclass(frozen=True)
class Job:
    """One worker's part of a step."""

    base_url: str
    workload: Workload
    streams: int  # concurrent streams this worker drives
    prompts: int | None  # requests to send (None: until the deadline)
    start_at_ns: int  # perf_counter_ns when every worker starts together
    deadline_ns: int | None  # time box end; in-flight requests are cut off there
    timeout_s: float
    seed: int
    headers: tuple[tuple[str, str], ...] = ()
    part: int = 0  # this worker's index among `parts` (shared-prefix slots, trace rows)
    parts: int = 1
    # Open loop: send times in seconds after start_at_ns (None: closed loop); `streams`
    # then caps the requests in flight (0: no cap).
    arrivals: tuple[float, ...] | None = None


def _connector() -> aiohttp.TCPConnector:
    return aiohttp.TCPConnector(limit=0, ttl_dns_cache=300, keepalive_timeout=60)


class _Request:
    """State of one request, kept outside the coroutine so a cut-off one keeps what it got."""

    __slots__ = ("parser", "record")

    def __init__(self, start_ns: int, requested: int, endpoint: str, keep: bool = False) -> None:
        self.record = RequestRecord(start_ns=start_ns, requested_output=requested)
        self.parser = StreamParser(endpoint, self.record, keep)


async def _send(
    session: aiohttp.ClientSession, url: str, body: bytes, req: _Request, job: Job
) -> None:
    headers = {"Content-Type": "application/json", "Accept-Encoding": "identity"}
    headers.update(job.headers)
    feed = req.parser.feed
    clock = time.perf_counter_ns
    try:
        async with session.post(url, data=body, headers=headers) as resp:
            if resp.status != 200:
                text = (await resp.read())[:300].decode("utf-8", "replace")
                req.record.error = f"HTTP {resp.status}: {text.strip()}"
                return
            async for data in resp.content.iter_any():
                feed(clock(), data)  # stamp first: parsing never delays this chunk's time
    except TimeoutError:
        req.record.error = f"timed out after {job.timeout_s:g} s"
    except aiohttp.ClientError as exc:
        req.record.error = f"{type(exc).__name__}: {exc}"[:300]
    finally:
        req.record.end_ns = clock()


async def _send_h1(client: H1Client, request: bytes, req: _Request, job: Job) -> None:
    """`_send` on console.bench.h1: the chunk is stamped inside the loop's read callback."""
    try:
        async with asyncio.timeout(job.timeout_s):
            status, body = await client.post(request, req.parser.feed)
        if status != 200:
            req.record.error = f"HTTP {status}: {body.decode('utf-8', 'replace').strip()}"
    except TimeoutError:
        req.record.error = f"timed out after {job.timeout_s:g} s"
    except (OSError, HttpError) as exc:
        req.record.error = f"{type(exc).__name__}: {exc}"[:300]
    finally:
        req.record.end_ns = time.perf_counter_ns()


@dataclass
class Health:
    """How busy this worker was during a job."""

    cpu_fraction: float = 0.0
    loop_lag_p99_ms: float = 0.0


async def _lag_probe(samples: list[float], period: float = 0.01) -> None:
    """Event-loop lag: how late a 10 ms timer fires."""
    loop = asyncio.get_running_loop()
    while True:
        before = loop.time()
        await asyncio.sleep(period)
        samples.append((loop.time() - before - period) * 1000)


async def run_job(
    job: Job,
    session: aiohttp.ClientSession,
    stop: Any = None,
    health: Health | None = None,
    clients: dict[str, H1Client] | None = None,
) -> list[RequestRecord]:
    """Drive `job.streams` closed-loop streams (or the open loop of `job.arrivals`); return
    every request's record. Plain http:// goes through console.bench.h1 (`clients` keeps its
    keep-alive connections from one job to the next, e.g. the warmup's); anything else
    through `session`."""
    path = PATHS[job.workload.endpoint]
    url = job.base_url.rstrip("/") + path
    h1 = client_for(clients if clients is not None else {}, job.base_url) \
        if H1Client.supports(job.base_url) else None
    source = PromptSource(job.workload, random.Random(job.seed), job.part, job.parts)
    keep = source.keeps_answers
    total = len(job.arrivals) if job.arrivals is not None else job.prompts
    remaining = [total]
    # Pre-build bodies so generating prompts never delays a stream (not multi-turn: a turn
    # needs the previous answer).
    prebuilt: deque[Prompt] = deque()
    if total is not None and source.prebuildable:
        prebuilt.extend(source.next() for _ in range(total))
    requests: list[_Request] = []
    in_flight: set[_Request] = set()

    def take() -> Prompt | None:
        if remaining[0] is not None:
            if remaining[0] <= 0:
                return None
            remaining[0] -= 1
        return prebuilt.popleft() if prebuilt else source.next()

    async def send(prompt: Prompt) -> None:
        req = _Request(time.perf_counter_ns(), prompt.output_len, job.workload.endpoint, keep)
        requests.append(req)
        in_flight.add(req)
        if h1 is not None:
            await _send_h1(h1, h1.request_bytes(path, prompt.body, job.headers), req, job)
        else:
            await _send(session, url, prompt.body, req, job)
        in_flight.discard(req)
        if keep:
            ok = req.record.error is None and not req.record.incomplete
            source.answered(prompt, req.parser.answer if ok else None)
            req.parser.answer = None

    def past_deadline() -> bool:
        return job.deadline_ns is not None and time.perf_counter_ns() >= job.deadline_ns

    async def stream_loop() -> None:
        while (prompt := take()) is not None:
            if past_deadline():
                return
            await send(prompt)
            if stop is not None and stop.is_set():
                return

    tasks: list[asyncio.Task[None]] = []
    spawned: list[asyncio.Task[None]] = []  # the open loop's requests

    async def limited(prompt: Prompt, gate: asyncio.Semaphore | None) -> None:
        if gate is None:
            await send(prompt)
            return
        async with gate:
            if not past_deadline():
                await send(prompt)

    async def open_loop(arrivals: tuple[float, ...]) -> None:
        gate = asyncio.Semaphore(job.streams) if job.streams > 0 else None
        for offset in arrivals:
            wait = (job.start_at_ns + offset * 1e9 - time.perf_counter_ns()) / 1e9
            if wait > 0:
                await asyncio.sleep(wait)
            prompt = take()
            if prompt is None or past_deadline() or (stop is not None and stop.is_set()):
                break
            spawned.append(asyncio.create_task(limited(prompt, gate)))
        if spawned:
            await asyncio.wait(spawned)

    delay = (job.start_at_ns - time.perf_counter_ns()) / 1e9
    if delay > 0:
        await asyncio.sleep(delay)
    if job.arrivals is not None:
        tasks.append(asyncio.create_task(open_loop(job.arrivals)))
    else:
        tasks.extend(asyncio.create_task(stream_loop()) for _ in range(job.streams))
    gc.freeze()  # fewer GC pauses while streaming (as vLLM's bench does)
    all_done = asyncio.gather(*tasks)
    lags: list[float] = []
    probe = asyncio.create_task(_lag_probe(lags))
    cpu0, wall0 = time.process_time(), time.perf_counter()
    try:
        while not all_done.done():
            limit = 0.1
            if job.deadline_ns is not None:
                limit = min(limit, max(0.0, (job.deadline_ns - time.perf_counter_ns()) / 1e9))
            await asyncio.wait([all_done], timeout=limit)
            timed_out = job.deadline_ns is not None and time.perf_counter_ns() >= job.deadline_ns
            if stop is not None and _PARENT_PID and os.getppid() != _PARENT_PID:
                stop.set()  # the console died: stop loading the server now
            if timed_out or (stop is not None and stop.is_set()):
                for req in in_flight:
                    req.record.incomplete = True
                for task in (*tasks, *spawned):
                    task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await all_done
                await asyncio.gather(*spawned, return_exceptions=True)
                break
    finally:
        gc.unfreeze()
        probe.cancel()
        if h1 is not None and clients is None:
            h1.close()
        if health is not None:
            wall = time.perf_counter() - wall0
            health.cpu_fraction = (time.process_time() - cpu0) / wall if wall > 0 else 0.0
            lags.sort()
            health.loop_lag_p99_ms = lags[int(0.99 * (len(lags) - 1))] if lags else 0.0
    records = []
    for req in requests:
        if req.record.incomplete and not req.record.end_ns:
            req.record.end_ns = time.perf_counter_ns()
        records.append(req.parser.finish())
    return records


def new_session(timeout_s: float) -> aiohttp.ClientSession:
    timeout = aiohttp.ClientTimeout(total=timeout_s, sock_connect=10)
    return aiohttp.ClientSession(
        connector=_connector(), timeout=timeout, read_bufsize=1 << 20, auto_decompress=False
    )


class _StopFlag:
    """Set by SIGUSR1 from the parent: cut the current job's requests off."""

    def __init__(self) -> None:
        self.flag = False

    def is_set(self) -> bool:
        return self.flag

    def set(self) -> None:
        self.flag = True


def worker_main(conn: Any) -> None:
    """Process entry: receive Jobs on `conn`, send back lists of record tuples.
    One session lives across jobs, so warmup leaves keep-alive connections open."""
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    _raise_nofile()
    stop = _StopFlag()

    async def serve() -> None:
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGUSR1, stop.set)
        session: aiohttp.ClientSession | None = None
        clients: dict[str, H1Client] = {}  # keep-alive connections live across jobs
        try:
            while True:
                job = await loop.run_in_executor(None, conn.recv)
                if job is None:
                    return
                stop.flag = False
                if session is None or session.timeout.total != job.timeout_s:
                    if session is not None:
                        await session.close()
                    session = new_session(job.timeout_s)
                try:
                    health = Health()
                    records = await run_job(job, session, stop, health, clients)
                    payload = [r.to_tuple() for r in records]
                    conn.send(("ok", payload, (health.cpu_fraction, health.loop_lag_p99_ms)))
                except Exception as exc:  # report, keep serving
                    conn.send(("error", f"{type(exc).__name__}: {exc}"))
        finally:
            for client in clients.values():
                client.close()
            if session is not None:
                await session.close()

    with contextlib.suppress(EOFError, KeyboardInterrupt, BrokenPipeError):
        asyncio.run(serve())


def _raise_nofile() -> None:
    """One socket per stream: lift the soft RLIMIT_NOFILE to the hard limit."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft < hard:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ImportError, ValueError, OSError):
        pass


def main() -> None:
    """`python -m console.bench.worker ADDRESS`: connect back to the parent's listener
    (authkey in $PLATEAU_WORKER_KEY) and serve jobs until told to stop."""
    from multiprocessing.connection import Client

    global _PARENT_PID
    _PARENT_PID = os.getppid()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when we stop
    key = bytes.fromhex(os.environ.pop("PLATEAU_WORKER_KEY", ""))
    conn = Client(sys.argv[1], family="AF_UNIX", authkey=key)
    worker_main(conn)


if __name__ == "__main__":
    main()
