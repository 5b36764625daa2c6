"""How many streamed tokens/s can the simulator serve on ONE core, at 1024 concurrent streams?

    .venv/bin/python tests/bench/bench_sim_throughput.py [--streams 1024] [--tokens 64]
        [--itl-ms 20] [--api generate|completions] [--workers 2]

The sim runs in ideal-timing mode (fixed ITL, no model), pinned to one core with
os.sched_setaffinity. Load comes from N aiohttp client processes (each its own event loop,
pinned to the other cores when there are any) so the client is not what we measure. The
offered rate is streams * 1000 / itl_ms tokens/s; the report compares the served rate to it
(ratio 1.0 = the sim kept up) and gives the observed mean inter-chunk gap per stream.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _client(url: str, api: str, streams: int, tokens: int) -> tuple[int, int, float]:
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=600)
    chunks = 0
    events = 0
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

        async def one() -> tuple[int, int]:
            if api == "generate":
                body = {"input_ids": [7] * 32, "stream": True,
                        "sampling_params": {"max_new_tokens": tokens, "ignore_eos": True}}
                path = "/generate"
            else:
                body = {"model": "m", "prompt": "a b c", "max_tokens": tokens, "stream": True,
                        "ignore_eos": True, "stream_options": {"include_usage": True}}
                path = "/v1/completions"
            got = 0
            n_events = 0
            async with session.post(url + path, json=body) as resp:
                async for line in resp.content:
                    if line.startswith(b"data: {"):
                        n_events += 1
                        # native: cumulative meta_info; OpenAI: the final usage chunk
                        marker = line.rfind(b'"completion_tokens":')
                        if marker >= 0:
                            end = line.find(b",", marker)
                            got = int(line[marker + 20:end])
            return got, n_events

        start = time.perf_counter()
        results = await asyncio.gather(*(one() for _ in range(streams)))
        elapsed = time.perf_counter() - start
    for got, n_events in results:
        chunks += got
        events += n_events
    return chunks, events, elapsed


def _cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _worker(args: tuple[str, str, int, int, int | None],
            queue: mp.Queue[tuple[int, int, float]]) -> None:
    url, api, streams, tokens, cpu = args
    if cpu is not None and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {cpu})
    queue.put(asyncio.run(_client(url, api, streams, tokens)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--streams", type=int, default=1024)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--itl-ms", type=float, default=20.0)
    ap.add_argument("--api", choices=["generate", "completions"], default="completions")
    ap.add_argument("--workers", type=int, default=2)
    opts = ap.parse_args()

    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else [0]
    sim_cpu = cpus[0]
    client_cpus = cpus[1:] or cpus
    port = _free_port()
    log = open(f"/tmp/bench-sim-{port}.log", "wb")  # noqa: SIM115
    sim = subprocess.Popen(
        [sys.executable, "-m", "console.sim", "--model-path", "m", "--port", str(port),
         "--sim-startup-seconds", "0", "--sim-ideal-ttft-ms", "50", "--sim-ideal-itl-ms",
         str(opts.itl_ms), "--log-level-http", "warning",
         "--sim-state-file", f"/tmp/bench-sim-{port}.json"],
        stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
        preexec_fn=(lambda: os.sched_setaffinity(0, {sim_cpu}))
        if hasattr(os, "sched_setaffinity") else None,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        import urllib.request

        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(url + "/ready", timeout=1) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                time.sleep(0.1)
        per = [opts.streams // opts.workers + (i < opts.streams % opts.workers)
               for i in range(opts.workers)]
        queue: mp.Queue[tuple[int, int, float]] = mp.Queue()
        procs = [mp.Process(target=_worker, args=((url, opts.api, n, opts.tokens,
                                                   client_cpus[i % len(client_cpus)]), queue))
                 for i, n in enumerate(per)]
        cpu0 = _cpu_seconds(sim.pid)
        t0 = time.perf_counter()
        for p in procs:
            p.start()
        results = [queue.get(timeout=900) for _ in procs]
        wall = time.perf_counter() - t0
        sim_cpu_s = _cpu_seconds(sim.pid) - cpu0
        for p in procs:
            p.join()
        tokens = sum(r[0] for r in results)
        events = sum(r[1] for r in results)
        expected = opts.streams * opts.tokens
        ideal_wall = 0.05 + (opts.tokens - 1) * opts.itl_ms / 1000
        offered = opts.streams * 1000 / opts.itl_ms
        served = tokens / wall
        print(f"sim: 1 core (cpu {sim_cpu}), ideal-timing ITL {opts.itl_ms} ms; client: aiohttp "
              f"{aiohttp.__version__}, {opts.workers} processes on cpus {client_cpus}; "
              f"api /{opts.api}")
        print(f"streams={opts.streams} tokens/stream={opts.tokens} received={tokens}/{expected} "
              f"SSE events={events} (tokens/event {tokens / max(1, events):.2f})")
        print(f"wall={wall:.2f}s ideal={ideal_wall:.2f}s  served={served:,.0f} tok/s  "
              f"offered={offered:,.0f} tok/s  served/offered={served / offered:.2f}  "
              f"mean gap/stream={wall / max(1, events / opts.streams) * 1000:.1f} ms")
        print(f"sim CPU: {sim_cpu_s:.2f}s over {wall:.2f}s wall = {sim_cpu_s / wall:.0%} of its "
              f"core (below ~90%: the sim was not the bottleneck)")
    finally:
        sim.send_signal(signal.SIGTERM)
        try:
            sim.wait(timeout=30)
        except subprocess.TimeoutExpired:
            sim.kill()
        log.close()


if __name__ == "__main__":
    main()
