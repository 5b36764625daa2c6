"""Benchmark: parse+classify lines/s on one core vs `grep -E` over the same 1M-line file, the
full stats pipeline, and following a log that grows by 5,000 lines/s (delivered vs written,
lag, memory).

Run:  .venv/bin/python tests/bench/bench_logs_parse.py [--lines 1000000] [--follow-seconds 10]
      [--compare-baseline REV]   (same measurements on console/ as of git REV, interleaved, so
                                  before/after come from the same run on the same box)
Parsing is pinned to one CPU (--cpu, default the last one). Prints figures and ratios; nothing
is asserted here (the bounds are checked in tests/test_logs_follow.py).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import itertools
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GREP_PATTERN = (
    r"KV cache pool is full|out of memory|Out of memory|watchdog timeout|crashed with exit code"
    r"|hit an exception|Traceback|DeepGEMM|default MoE kernel config|NaN detected"
    r"|Health check failed|SIGTERM received|fired up"
)
DECODE = ("[2026-02-19 05:25:03 TP0] Decode batch, #running-req: 64, #token: {n}, token usage: "
          "0.12, cuda graph: True, gen throughput (token/s): 5321.47, #queue-req: 0\n")


def generate(path: Path, count: int) -> None:
    rng = random.Random(1)
    templates = [
        "[2026-02-19 05:{m:02d}:{s:02d} TP0] Decode batch, #running-req: {r}, #token: {t}, "
        "token usage: {u:.2f}, cuda graph: True, gen throughput (token/s): {g:.2f}, "
        "#queue-req: {q}",
        "[2026-02-19 05:{m:02d}:{s:02d} TP0] Prefill batch, #new-seq: 4, #new-token: 4096, "
        "#cached-token: 0, token usage: {u:.2f}, #running-req: {r}, #queue-req: {q}, "
        "#pending-token: 0, cuda graph: True, input throughput (token/s): {g:.2f}",
        '[2026-02-19 05:{m:02d}:{s:02d}] INFO:     127.0.0.1:{t} - "POST /v1/chat/completions '
        'HTTP/1.1" 200 OK',
        "[2026-02-19 05:{m:02d}:{s:02d} TP0] KV cache pool is full. Retract requests. "
        "#retracted_reqs: 3, #new_tokens_gained: {t}, #new_token_ratio: 0.4000 -> 0.7000",
        "[2026-02-19 05:{m:02d}:{s:02d}] Load weight begin. avail mem=138.52 GB",
    ]
    weights = [60, 15, 22, 1, 2]
    with path.open("w") as handle:
        for i in range(count):
            template = rng.choices(templates, weights)[0]
            handle.write(template.format(m=(i // 60) % 60, s=i % 60, r=rng.randint(1, 256),
                                         t=rng.randint(1, 900000), u=rng.random(),
                                         g=rng.random() * 6000, q=rng.randint(0, 30)) + "\n")


# -- measurements (run in a child process whose sys.path starts at the tree under test) -------


def measure_parse(path: Path, chunk: int) -> dict[str, float]:
    """Lines/s of parse+classify, and of parse+classify+batch stats+aggregation, fed the way
    the follower feeds them (feed_lines per record of `chunk` lines)."""
    from console.logs.assembler import EventAssembler
    from console.logs.server_stats import StatsAggregator

    with path.open("rb") as handle:
        raw = [line.rstrip(b"\n").decode("utf-8", "replace") for line in handle]
    chunks = [raw[i : i + chunk] for i in range(0, len(raw), chunk)]

    gc.collect()
    assembler = EventAssembler()
    events = 0
    t0 = time.perf_counter()
    for part in chunks:
        events += len(assembler.feed_lines(part))
    parse_s = time.perf_counter() - t0

    gc.collect()
    assembler = EventAssembler()
    aggregator = StatsAggregator()
    t0 = time.perf_counter()
    for part in chunks:
        aggregator.add_events(assembler.feed_lines(part))
    aggregator.snapshot()
    full_s = time.perf_counter() - t0
    return {"lines": len(raw), "events": events, "parse_lps": len(raw) / parse_s,
            "full_lps": len(raw) / full_s}


async def measure_follow(seconds: float, rate: int, max_lines: int) -> dict[str, float]:
    """A writer appends `rate` lines/s (paced on the clock, in 20 ms ticks); the follower
    parses them into a capped LogStore and a StatsAggregator, as the app does."""
    from console.host.local import LocalTransport
    from console.logs.follower import LogFollower
    from console.logs.server_stats import StatsAggregator
    from console.logs.store import LogStore

    directory = Path(tempfile.mkdtemp())
    log = directory / "server.log"
    log.write_text("")
    transport = LocalTransport("bench")
    await transport.connect()
    follower = LogFollower(transport, str(log), start_lines=0, batch_interval=0.15)
    store = LogStore(max_lines=max_lines)
    aggregator = StatsAggregator()
    written = 0
    write_times: list[float] = []  # monotonic time when line i was flushed
    delivered = 0
    lags: list[float] = []
    rss: list[tuple[float, int]] = []
    writer_done = asyncio.Event()
    started = asyncio.Event()  # the follower has opened the file (start_lines=0: tail from here)
    caught_up_at: float | None = None
    stop_write_at = 0.0

    async def writer() -> None:
        nonlocal written, stop_write_at
        start = time.monotonic()
        with log.open("a") as handle:
            while (now := time.monotonic()) - start < seconds:
                target = int((now - start) * rate)
                if target > written:
                    handle.write("".join(DECODE.format(n=n) for n in range(written, target)))
                    handle.flush()
                    stamp = time.monotonic()
                    write_times.extend([stamp] * (target - written))
                    written = target
                await asyncio.sleep(0.02)
        stop_write_at = time.monotonic()
        writer_done.set()

    async def reader() -> None:
        nonlocal delivered, caught_up_at
        async for batch in follower:
            if any(n.kind == "started" for n in batch.notices):
                started.set()
            store.append(batch.events)
            aggregator.add_events(batch.events)
            delivered += sum(len(e.lines) for e in batch.events)
            now = time.monotonic()
            if delivered:
                lags.append(now - write_times[min(delivered, len(write_times)) - 1])
            rss.append((now, _rss_bytes()))
            if writer_done.is_set() and delivered >= written:
                caught_up_at = now
                return

    cpu0 = time.process_time()
    task = asyncio.create_task(reader())
    # asyncio's own wait_for: this bench also runs against older trees (no console.aio)
    await asyncio.wait_for(started.wait(), 10)  # noqa: TID251
    await writer()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(task, 10)  # noqa: TID251
    cpu = time.process_time() - cpu0
    remote_cpu = _child_cpu(follower.remote_pid)
    await follower.close()
    await transport.close()
    shutil.rmtree(directory, ignore_errors=True)
    half = [value for at, value in rss if at >= rss[0][0] + seconds / 2] or [0]
    lags.sort()
    return {
        "written": written, "delivered": delivered, "rate": written / seconds,
        "catch_up_s": -1.0 if caught_up_at is None else caught_up_at - stop_write_at,
        "lag_p50_ms": 1000 * statistics.median(lags) if lags else -1,
        "lag_p99_ms": 1000 * lags[int(0.99 * (len(lags) - 1))] if lags else -1,
        "lag_max_ms": 1000 * lags[-1] if lags else -1,
        "store_lines": store.line_count, "store_mb": store.char_count / 1e6,
        "rss_min_mb": min(half) / 1e6, "rss_max_mb": max(half) / 1e6,
        "console_cpu_pct": 100 * cpu / (seconds + 1e-9),
        "remote_cpu_s": remote_cpu,
    }


def _rss_bytes() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * resource.getpagesize()


def _child_cpu(pid: int | None) -> float:
    if pid is None:
        return -1.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return -1.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def child(args: argparse.Namespace) -> None:
    """One measurement in this process, as JSON on stdout (used by main, per tree)."""
    sys.path.insert(0, args.tree)
    import console.logs.assembler as assembler_module

    assert assembler_module.__file__.startswith(args.tree), assembler_module.__file__
    if args.what == "parse":
        os.sched_setaffinity(0, {args.cpu})
        result = measure_parse(Path(args.file), args.chunk)
    else:
        result = asyncio.run(measure_follow(args.follow_seconds, args.rate, args.max_lines))
    print(json.dumps(result))


# -- driver ---------------------------------------------------------------------------------


def run_child(tree: str, what: str, args: argparse.Namespace, path: Path) -> dict[str, float]:
    argv = [sys.executable, __file__, "--child", what, "--tree", tree, "--file", str(path),
            "--cpu", str(args.cpu), "--chunk", str(args.chunk), "--rate", str(args.rate),
            "--follow-seconds", str(args.follow_seconds), "--max-lines", str(args.max_lines)]
    done = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=tree)
    if done.returncode != 0:
        raise SystemExit(f"{what} on {tree} failed:\n{done.stderr}")
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def extract(rev: str, into: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", rev, "console"],
                             capture_output=True, check=True).stdout
    tar_path = into / "baseline.tar"
    tar_path.write_bytes(archive)
    with tarfile.open(tar_path) as tar:
        tar.extractall(into / "tree", filter="data")
    return into / "tree"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--follow-seconds", type=float, default=10.0)
    parser.add_argument("--rate", type=int, default=5000)
    parser.add_argument("--stress-rates", default="25000,50000",
                        help="extra short follow runs (3 s each) to show the margin; '' for none")
    parser.add_argument("--max-lines", type=int, default=20_000)
    parser.add_argument("--chunk", type=int, default=1000, help="lines per feed_lines call")
    parser.add_argument("--cpu", type=int, default=(os.cpu_count() or 1) - 1)
    parser.add_argument("--repeat", type=int, default=2, help="parse runs per tree (best kept)")
    parser.add_argument("--compare-baseline", metavar="REV",
                        help="also measure console/ at git REV (e.g. 58628a1), interleaved")
    parser.add_argument("--skip-follow", action="store_true")
    parser.add_argument("--child", choices=["parse", "follow"], help=argparse.SUPPRESS)
    parser.add_argument("--tree", default=str(ROOT), help=argparse.SUPPRESS)
    parser.add_argument("--file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.what = args.child
        child(args)
        return

    with tempfile.TemporaryDirectory() as tmp:
        trees = {"now": str(ROOT)}
        if args.compare_baseline:
            trees = {"baseline": str(extract(args.compare_baseline, Path(tmp))), **trees}
        path = Path(tmp) / "big.log"
        generate(path, args.lines)
        size = path.stat().st_size
        t0 = time.perf_counter()
        grep = subprocess.run(["taskset", "-c", str(args.cpu), "grep", "-E", "-c", GREP_PATTERN,
                               str(path)], capture_output=True, text=True, check=False)
        grep_lps = args.lines / (time.perf_counter() - t0)
        parse: dict[str, dict[str, float]] = {}
        for _ in range(args.repeat):
            for name, tree in trees.items():
                result = run_child(tree, "parse", args, path)
                best = parse.setdefault(name, result)
                for key in ("parse_lps", "full_lps"):
                    best[key] = max(best[key], result[key])
        print(f"file: {args.lines:,} lines, {size / 1e6:.1f} MB; one core (cpu {args.cpu}); "
              f"best of {args.repeat}; feed_lines in chunks of {args.chunk}")
        print(f"grep -E (catalogue-like alternation, -c): {grep_lps:12,.0f} lines/s "
              f"(matches: {grep.stdout.strip()})")
        for name, result in parse.items():
            print(f"[{name:8}] parse+classify:                {result['parse_lps']:12,.0f} "
                  f"lines/s  = grep/{grep_lps / result['parse_lps']:.1f}")
            print(f"[{name:8}] + batch stats + aggregation:   {result['full_lps']:12,.0f} "
                  f"lines/s  = grep/{grep_lps / result['full_lps']:.1f}")
        if "baseline" in parse:
            base, now = parse["baseline"], parse["now"]
            print(f"speed-up now/baseline: parse+classify "
                  f"{now['parse_lps'] / base['parse_lps']:.2f}x, full pipeline "
                  f"{now['full_lps'] / base['full_lps']:.2f}x")

        if args.skip_follow:
            return
        runs = [(args.rate, args.follow_seconds)] + [
            (int(r), 3.0) for r in args.stress_rates.split(",") if r.strip()]
        for (rate, seconds), (name, tree) in itertools.product(runs, trees.items()):
            f = run_child(tree, "follow", argparse.Namespace(
                **{**vars(args), "rate": rate, "follow_seconds": seconds}), path)
            print(f"[{name:8}] follow {rate:,} lines/s for {seconds:g} s: wrote "
                  f"{f['written']:,.0f}, delivered {f['delivered']:,.0f} "
                  f"({'all' if f['delivered'] >= f['written'] else 'MISSING LINES'}); caught up "
                  + (f"{f['catch_up_s'] * 1000:.0f} ms after the writer stopped"
                     if f["catch_up_s"] >= 0 else "NEVER (10 s timeout)"))
            print(f"           lag write->delivered p50 {f['lag_p50_ms']:.0f} ms, p99 "
                  f"{f['lag_p99_ms']:.0f} ms, max {f['lag_max_ms']:.0f} ms (batches every 150 ms,"
                  f" host poll 100 ms); console CPU {f['console_cpu_pct']:.0f}% of one core "
                  f"(writer included), host follower CPU {f['remote_cpu_s']:.2f} s")
            print(f"           store {f['store_lines']:,.0f} lines (cap {args.max_lines:,}), "
                  f"{f['store_mb']:.1f} MB text; RSS second half {f['rss_min_mb']:.0f}-"
                  f"{f['rss_max_mb']:.0f} MB (flat = bounded)")
    print(f"(python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load "
          f"{os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
