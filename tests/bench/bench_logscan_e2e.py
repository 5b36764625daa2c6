"""`plateau logscan` end to end on a 1M-line realistic SGLang log, against `grep -E` with every
catalogue pattern and lnav filtering on the same patterns, in the same run, on the same file.

End to end = a fresh `plateau logscan FILE` process: interpreter start and imports, read,
decode, parse, classify, stats, report written to a pipe. Its peers read the same file in
their own process the same way (grep -E -c -f PATTERNS FILE; lnav -n -c ':filter-in RE' FILE).
Figures: lines/s (file lines / wall seconds), the CPU seconds (user + sys) and the peak RSS of
each process (wait4), the median of --repeat runs, runs of the tools interleaved so load
changes hit all of them. Each Python tree's bytecode is compiled first, as an installed
package has it (an environment with PYTHONDONTWRITEBYTECODE would compile it on every run).

The log (deterministic, seeded) is built from real material: the launch preamble of
tests/data/logs/sglang_two_launches.log (a capture's shape), then serving traffic in the
proportions of a busy server (decode/prefill batch lines, uvicorn access lines), with every
catalogue example appearing as a prefixed line now and then, tracebacks ending in catalogue
exception lines, tqdm bars and `warnings.warn` blocks, and a second launch half-way.

    .venv/bin/python tests/bench/bench_logscan_e2e.py [--lines 1000000] [--repeat 3]
        [--compare-baseline REV]  (also logscan of console/ at git REV, interleaved)
        [--cpu N]                 (pin every measured process to CPU N; default: not pinned)
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = ROOT / "console" / "logs" / "catalogue.toml"
CAPTURE = ROOT / "tests" / "data" / "logs" / "sglang_two_launches.log"
PREFIX_RE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)")

DECODE = ("Decode batch, #running-req: {r}, #token: {t}, token usage: {u:.2f}, cuda graph: {g}, "
          "gen throughput (token/s): {x:.2f}, #queue-req: {q}")
PREFILL = ("Prefill batch, #new-seq: {n}, #new-token: {k}, #cached-token: {c}, token usage: "
           "{u:.2f}, #running-req: {r}, #queue-req: {q}, #pending-token: {p}, cuda graph: True, "
           "input throughput (token/s): {x:.2f}")
ACCESS = 'INFO:     127.0.0.1:{port} - "{req}" {status}'
REQUESTS = [("POST /v1/chat/completions HTTP/1.1", "200 OK", 70),
            ("POST /generate HTTP/1.1", "200 OK", 20), ("GET /health HTTP/1.1", "200 OK", 6),
            ("GET /metrics HTTP/1.1", "200 OK", 3),
            ("POST /v1/chat/completions HTTP/1.1", "400 Bad Request", 1)]
TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "/opt/venv/lib/python3.11/site-packages/sglang/srt/managers/scheduler.py", '
    "line 2710, in run_scheduler_process",
    "    scheduler.event_loop_overlap()",
    '  File "/opt/venv/lib/python3.11/site-packages/torch/utils/_contextlib.py", line 116, '
    "in decorate_context",
    "    return func(*args, **kwargs)",
]
TQDM = "Capturing batches (bs={b} avail_mem=17.38 GB): {p}%|{bar}| {i}/36 [00:09<00:00,  3.71it/s]"
WARN_BLOCK = ["/opt/venv/lib/python3.11/site-packages/torch/cuda/__init__.py:61: FutureWarning: "
              "The pynvml package is deprecated.", "  import pynvml  # type: ignore[import]"]


# -- the log ----------------------------------------------------------------------------------


def catalogue_examples() -> list[tuple[str, bool]]:
    """(example message, is the entry multiline) for every catalogue example."""
    data = tomllib.loads(CATALOGUE.read_text())
    return [(example, bool(entry.get("multiline"))) for entry in data["message"]
            for example in entry.get("examples", [])]


def preamble() -> list[tuple[str, str]]:
    """The first launch of the capture up to its ready line: ("ts", the line after its
    prefix's time) or ("raw", an unprefixed line)."""
    out: list[tuple[str, str]] = []
    for line in CAPTURE.read_text().splitlines():
        found = PREFIX_RE.match(line)
        out.append(("ts", line[found.end():]) if found else ("raw", line))
        if "fired up and ready to roll" in line:
            break
    return out


def log_lines(count: int, seed: int = 19) -> Iterator[str]:
    rng = random.Random(seed)
    examples = catalogue_examples()
    launch = preamble()
    clock = datetime(2026, 2, 19, 5, 20, 0)
    emitted = 0
    relaunch_at = count // 2

    def stamp() -> str:
        return clock.strftime("%Y-%m-%d %H:%M:%S")

    def launch_lines() -> Iterator[str]:
        for kind, text in launch:
            yield f"[{stamp()}{text}" if kind == "ts" else text

    kinds = ["decode", "prefill", "access", "catalogue", "traceback", "tqdm", "warnblock", "info"]
    weights = [5600, 1500, 2700, 60, 4, 30, 6, 100]
    tokens = 100_000
    relaunched = False
    while emitted < count:
        if emitted == 0 or (not relaunched and emitted >= relaunch_at):
            relaunched = relaunched or emitted > 0
            block = list(launch_lines())
        else:
            clock += timedelta(milliseconds=rng.choice((0, 0, 0, 1000)))
            kind = rng.choices(kinds, weights)[0]
            ts = stamp()
            tokens = (tokens + rng.randint(-4000, 5000)) % 900_000
            if kind == "decode":
                block = [f"[{ts} TP0] " + DECODE.format(
                    r=rng.randint(0, 256), t=tokens, u=tokens / 900_000,
                    g="True" if rng.random() > 0.002 else "False",
                    x=rng.uniform(800, 6000), q=rng.randint(0, 40))]
            elif kind == "prefill":
                block = [f"[{ts} TP0] " + PREFILL.format(
                    n=rng.randint(1, 16), k=rng.randint(7, 8192), c=rng.randint(0, 4096),
                    u=tokens / 900_000, r=rng.randint(0, 256), q=rng.randint(0, 40),
                    p=rng.randint(0, 20480), x=rng.uniform(1000, 32000))]
            elif kind == "access":
                req, status = rng.choices([(r, s) for r, s, _ in REQUESTS],
                                          [w for _, _, w in REQUESTS])[0]
                block = [f"[{ts}] " + ACCESS.format(port=rng.randint(30000, 65000), req=req,
                                                    status=status)]
            elif kind == "catalogue":
                message, multiline = rng.choice(examples)
                block = [f"[{ts} TP{rng.randint(0, 1)}] {message}"]
                if multiline:
                    block += ["Possible solutions:", "1. Lower --max-running-requests"]
            elif kind == "traceback":
                exception = rng.choice([m for m, _ in examples if "Error" in m or "error" in m]
                                       or ["RuntimeError: boom"])
                block = [f"[{ts} TP0] Scheduler hit an exception: ", *TRACEBACK, exception]
            elif kind == "tqdm":
                i = rng.randint(1, 36)
                block = [TQDM.format(b=rng.choice((1, 8, 64, 256)), p=i * 100 // 36,
                                     bar="█" * (i * 10 // 36) + " " * (10 - i * 10 // 36), i=i)]
            elif kind == "warnblock":
                block = list(WARN_BLOCK)
            else:
                block = [f"[{ts} TP0] Cache flushed successfully! rid={rng.getrandbits(64):016x}"]
        for line in block:
            if emitted >= count:
                return
            emitted += 1
            yield line


def write_log(path: Path, count: int) -> None:
    with path.open("w", encoding="utf-8") as handle:
        batch: list[str] = []
        for line in log_lines(count):
            batch.append(line)
            if len(batch) >= 10_000:
                handle.write("\n".join(batch) + "\n")
                batch = []
        if batch:
            handle.write("\n".join(batch) + "\n")


# -- the peers' patterns ----------------------------------------------------------------------


def catalogue_patterns() -> list[tuple[str, list[str]]]:
    data = tomllib.loads(CATALOGUE.read_text())
    return [(entry["pattern"], entry.get("examples", [])) for entry in data["message"]]


def to_ere(pattern: str) -> str:
    """A catalogue pattern (Python re) as POSIX ERE with GNU grep's extensions (\\w, \\s)."""
    ere = pattern.replace("(?:", "(").replace(r"[\w-]", "[[:alnum:]_-]")
    return ere.replace(r"\d", "[0-9]")


def write_ere_patterns(path: Path) -> int:
    """One ERE per line; checked: each matches its entry's examples under grep -E. Returns
    the number of patterns."""
    patterns = catalogue_patterns()
    path.write_text("".join(to_ere(p) + "\n" for p, _ in patterns))
    for pattern, examples in patterns:
        for example in examples:
            found = subprocess.run(["grep", "-E", "-q", "-e", to_ere(pattern)],
                                   input=example, text=True, check=False)
            if found.returncode != 0:
                raise SystemExit(f"ERE translation of {pattern!r} misses {example!r}")
    return len(patterns)


def pcre_alternation() -> str:
    return "|".join(f"(?:{p})" for p, _ in catalogue_patterns())


# -- measuring --------------------------------------------------------------------------------


def measure(argv: list[str], *, cwd: Path, env: dict[str, str] | None = None,
            cpu: int | None) -> tuple[float, float, float, bytes]:
    """(wall seconds, peak RSS MB, CPU seconds, stdout) of one process run to completion."""
    if cpu is not None:
        argv = ["taskset", "-c", str(cpu), *argv]
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        stderr = proc.stderr.read() if proc.stderr else b""
        if proc.returncode != 0:
            raise SystemExit(f"{argv[:4]} failed ({proc.returncode}): {stderr.decode()[-2000:]}")
        out.seek(0)
        return wall, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime, out.read()


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
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cpu", type=int, default=None)
    parser.add_argument("--compare-baseline", metavar="REV")
    parser.add_argument("--keep", metavar="PATH", help="also copy the generated log here")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        log = tmp / "sglang.log"
        t0 = time.perf_counter()
        write_log(log, args.lines)
        print(f"log: {args.lines:,} lines, {log.stat().st_size / 1e6:.1f} MB "
              f"(generated in {time.perf_counter() - t0:.1f} s)")
        if args.keep:
            shutil.copy(log, args.keep)
        ere = tmp / "patterns.ere"
        count = write_ere_patterns(ere)

        # Bytecode first, as an installed package has it: this environment may set
        # PYTHONDONTWRITEBYTECODE, and then every run would compile the checkout's modules again.
        trees = [ROOT]
        tools: dict[str, tuple[list[str], Path, dict[str, str] | None]] = {}
        plain_env = {**os.environ, "PYTHONPATH": ""}
        tools["logscan"] = ([sys.executable, "-m", "console.cli", "logscan", str(log)], ROOT,
                            plain_env)
        if args.compare_baseline:
            tree = extract(args.compare_baseline, tmp)
            trees.append(tree)
            tools[f"logscan@{args.compare_baseline}"] = (
                [sys.executable, "-m", "console.cli", "logscan", str(log)], tree,
                {**plain_env, "PYTHONPATH": str(tree)})
        tools["grep -E"] = (["grep", "-E", "-c", "-f", str(ere), str(log)], tmp, None)
        lnav = shutil.which("lnav")
        if lnav:
            home = tmp / "lnav-home"
            home.mkdir()
            tools["lnav"] = ([lnav, "-n", "-c", f":filter-in {pcre_alternation()}", str(log)],
                             tmp, {**os.environ, "HOME": str(home)})
        else:
            print("lnav: not installed (apt-get install -y lnav); grep is the only peer")

        for tree in trees:
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "console")],
                           check=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""})
        results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in tools}
        outputs: dict[str, bytes] = {}
        for _ in range(args.repeat):
            for name, (argv, cwd, env) in tools.items():
                wall, rss, cpu_s, out = measure(argv, cwd=cwd, env=env, cpu=args.cpu)
                results[name].append((wall, rss, cpu_s))
                outputs[name] = out

        print(f"peers: grep -E with {count} catalogue patterns (-c -f); lnav -n with one "
              f":filter-in of the same {count} patterns (prints the matching lines)")
        print(f"median of {args.repeat}, interleaved; "
              + (f"pinned to cpu {args.cpu}" if args.cpu is not None else "not pinned")
              + f"; load {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
        rate = {n: args.lines / statistics.median(w for w, _, _ in r) for n, r in results.items()}
        for name, rows in results.items():
            walls = sorted(w for w, _, _ in rows)
            rss = statistics.median(r for _, r, _ in rows)
            cpu_s = statistics.median(c for _, _, c in rows)
            ratios = "  ".join(f"{rate[name] / rate[peer]:6.2f}x {peer}" for peer in rate
                               if peer != name and not peer.startswith("logscan"))
            print(f"{name:22} {rate[name]:12,.0f} lines/s  wall {statistics.median(walls):6.2f} s"
                  f" ({walls[0]:.2f}-{walls[-1]:.2f})  CPU {cpu_s:6.2f} s  peak RSS {rss:6.1f} MB"
                  f"  {ratios}")
        lnav_lines = outputs["lnav"].count(b"\n") if lnav else 0
        print(f"grep matched {outputs['grep -E'].decode().strip()} lines"
              + (f"; lnav printed {lnav_lines:,} lines" if lnav else ""))
        base = next((n for n in outputs if n.startswith("logscan@")), None)
        if base is not None:
            same = outputs[base] == outputs["logscan"]
            print(f"logscan output identical to {base}: {same}")
        head = outputs["logscan"].decode().splitlines()[0]
        print(f"logscan: {head}")
        # Flat memory: the same scan on the first quarter of the file, median of --repeat.
        quarter = tmp / "quarter.log"
        with log.open("rb") as src, quarter.open("wb") as dst:
            for _, line in zip(range(args.lines // 4), src, strict=False):
                dst.write(line)
        argv, cwd, env = tools["logscan"]
        small = statistics.median(
            measure([*argv[:-1], str(quarter)], cwd=cwd, env=env, cpu=args.cpu)[1]
            for _ in range(args.repeat))
        full = statistics.median(r for _, r, _ in results["logscan"])
        print(f"logscan peak RSS: {small:.1f} MB at {args.lines // 4:,} lines, {full:.1f} MB at "
              f"{args.lines:,} lines (x{full / small:.2f} for 4x the lines)")


if __name__ == "__main__":
    main()
