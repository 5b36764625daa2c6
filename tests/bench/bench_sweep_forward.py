"""A sweep through the SSH port forward against the same sweep direct, same run, and the event-loop
lag of the process running it (the console's loop, where the forward relays every byte).

    .venv/bin/python tests/bench/bench_sweep_forward.py [--concurrency 1,64,256,1024]
        [--repeats 3] [--ttft-ms 100] [--itl-ms 100] [--output-len 32]

The sim runs in ideal-timing mode behind a real OpenSSH sshd on loopback (tests/support/sshd.py).
This process plays the console: it connects an SshTransport, opens `forward_port(sim port)`
(the console's own forward, console/host/ssh.py, relayed on this loop: "forward") and
`load_forward_port(sim port)` (what a sweep of a host now uses: relayed by a child process,
console/host/forward_proc.py: "load-fwd"; "load-ssh" with OpenSSH's client relaying), and at
each concurrency, in rotating order, runs one native-engine step (console.bench) through each
and one direct. Meanwhile a
task measures its loop lag (how late a 5 ms asyncio sleep wakes, as a UI frame or a key would).
Printed per run and as medians: TTFT p50 and ITL p99 error against the truth, the forward's
added error in points (forward minus direct), loop lag p50/p99/max during each step.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from console.bench.engines import NativeEngine  # noqa: E402
from console.bench.sweep import run_sweep  # noqa: E402
from console.config_models import SweepPreset  # noqa: E402
from console.host.forward_proc import stop_child  # noqa: E402
from tests.support.host_fixtures import make_ssh_transport  # noqa: E402
from tests.support.ideal_sim import add_ideal_load_args, start_ideal_sim  # noqa: E402
from tests.support.sim_fixtures import free_port  # noqa: E402
from tests.support.sshd import start_sshd  # noqa: E402

LAG_PERIOD_S = 0.005
PATHS = ("forward", "load-fwd", "load-ssh", "load-fwd@base", "direct")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _tree_cpu_s(pids: list[int]) -> float:
    """User+system CPU of these processes and all their descendants (from /proc)."""
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    total, todo, seen = 0.0, list(pids), set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        todo.extend(parents.get(pid, []))
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    return total


async def _baseline_relay(rev: str, tmp: Path, options: dict[str, object], port: int
                          ) -> tuple[asyncio.subprocess.Process, int]:
    """The load forward's child as it was at REV (`git archive`; or REV is a directory holding
    such a tree, where there is no git), started the same way."""
    tree = Path(rev)
    if not tree.is_dir():
        tree = tmp / "base"
        tree.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "console.host.forward_child", cwd=tree,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(
            filter(None, [str(tree), os.environ.get("PYTHONPATH")]))},
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, start_new_session=True)
    assert process.stdin is not None and process.stdout is not None
    request = {"options": options, "port": port, "relay": "python"}
    process.stdin.write(json.dumps(request).encode() + b"\n")
    answer = json.loads(await process.stdout.readline())
    return process, int(answer["port"])


class LagProbe:
    """How late a short asyncio sleep wakes on this loop, sampled for as long as it runs."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            before = loop.time()
            await asyncio.sleep(LAG_PERIOD_S)
            self.samples.append((loop.time() - before - LAG_PERIOD_S) * 1000)

    def __enter__(self) -> LagProbe:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()

    def stats(self) -> tuple[float, float, float]:
        ordered = sorted(self.samples) or [0.0]
        last = len(ordered) - 1
        return ordered[last // 2], ordered[int(0.99 * last)], ordered[last]


async def _step(url: str, conc: int, args: argparse.Namespace,
                relay_pids: list[int]) -> dict[str, float]:
    spec = SweepPreset(concurrency=[conc], input_len=args.input_len, output_len=args.output_len,
                       num_prompts=max(4, conc * args.rounds), flush_cache=True,
                       warmup_prompts=conc, request_timeout_s=600)
    cpu_before = _tree_cpu_s(relay_pids)
    with LagProbe() as probe:
        outcome = await run_sweep(spec, url, engine=NativeEngine(), snapshot_server_info=False)
    relay_cpu = _tree_cpu_s(relay_pids) - cpu_before
    step = outcome.steps[0]
    metrics = step.metrics
    if step.status != "ok" or metrics is None:
        raise SystemExit(f"C={conc} {url}: step failed: {step.error}")
    lag = probe.stats()
    return {
        "ttft_p50": (metrics.ttft_ms.p50 - args.ttft_ms) / args.ttft_ms * 100,
        "itl_p99": (metrics.itl_ms.p99 - args.itl_ms) / args.itl_ms * 100,
        "lag_p50": lag[0], "lag_p99": lag[1], "lag_max": lag[2],
        "completed": metrics.completed,
        # the relay's CPU per streamed token (warm-up included in both); 0 for direct
        "relay_us": relay_cpu / max(1, metrics.completed * args.output_len) * 1e6
        if relay_pids else 0.0,
    }


def _row(rep: str, conc: int, path: str, m: dict[str, float]) -> str:
    return (f"| {rep} | {conc} | {path} | {m['ttft_p50']:+.1f}% | {m['itl_p99']:+.1f}% "
            f"| {m['lag_p50']:.1f} | {m['lag_p99']:.1f} | {m['lag_max']:.1f} "
            f"| {m['relay_us']:.1f} |")


async def main() -> None:
    parser = argparse.ArgumentParser()
    add_ideal_load_args(parser, [1, 64, 256, 1024])
    parser.add_argument("--paths", type=lambda t: t.split(","), default=list(PATHS),
                        help="forward (the console's, on its loop), load-fwd (a sweep's, in "
                        "a child process: asyncssh), load-ssh (the same with OpenSSH's client "
                        "relaying), load-fwd@base (load-fwd's child as it was at --baseline), "
                        "direct; direct is always run")
    parser.add_argument("--relays", type=int, default=0,
                        help="also run load-fwd-xN: the load forward with N relay processes")
    parser.add_argument("--baseline", default="",
                        help="a git revision (or a directory with its tree) whose load-forward "
                        "child runs as load-fwd@base")
    args = parser.parse_args()
    if "direct" not in args.paths:
        args.paths.append("direct")
    if not args.baseline and "load-fwd@base" in args.paths:
        args.paths.remove("load-fwd@base")
    if args.baseline and "load-fwd@base" not in args.paths:
        args.paths.append("load-fwd@base")

    tmp = Path(tempfile.mkdtemp(prefix="plateau-fwd-"))
    sshd = start_sshd(tmp / "sshd", max_sessions=4096)
    port = free_port()
    sim = start_ideal_sim(port, args.ttft_ms, args.itl_ms, tmp / "gpu.json")
    direct = f"http://127.0.0.1:{port}"
    results: dict[tuple[str, int], list[dict[str, float]]] = {}
    transport = make_ssh_transport(sshd)
    try:
        await transport.connect()
        forward = await transport.forward_port(port)
        load_forward = await transport.load_forward_port(port, relays=1)
        load_ssh = await transport.load_forward_port(port, relay="openssh")
        urls = {"forward": f"http://127.0.0.1:{forward.local_port}",
                "load-fwd": f"http://127.0.0.1:{load_forward.local_port}",
                "load-ssh": f"http://127.0.0.1:{load_ssh.local_port}", "direct": direct}
        pids = {"forward": [os.getpid()], "load-fwd": load_forward.pids,  # type: ignore[attr-defined]
                "load-ssh": load_ssh.pids, "direct": []}  # type: ignore[attr-defined]
        multi = None
        if args.relays > 1:
            name = f"load-fwd-x{args.relays}"
            multi = await transport.load_forward_port(port, relays=args.relays)
            urls[name] = f"http://127.0.0.1:{multi.local_port}"
            pids[name] = multi.pids  # type: ignore[attr-defined]
            args.paths.append(name)
        base = None
        if args.baseline:
            base = await _baseline_relay(args.baseline, tmp, transport.options(), port)
            urls["load-fwd@base"] = f"http://127.0.0.1:{base[1]}"
            pids["load-fwd@base"] = [base[0].pid]
        print(f"# sim ideal TTFT {args.ttft_ms:g} ms ITL {args.itl_ms:g} ms, output "
              f"{args.output_len}; {os.cpu_count()} CPUs; loadavg {os.getloadavg()[0]:.2f}")
        print("| run | C | path | TTFT p50 err | ITL p99 err | loop lag p50 ms | p99 | max "
              "| relay CPU µs/token |")
        print("|---:|---:|---|---:|---:|---:|---:|---:|---:|")
        for rep in range(args.repeats):
            for conc in args.concurrency:
                names = [n for n in args.paths if n in urls]
                shift = rep % len(names)
                for name in names[shift:] + names[:shift]:
                    url = urls[name]
                    m = await _step(url, conc, args, pids[name])
                    results.setdefault((name, conc), []).append(m)
                    print(_row(str(rep + 1), conc, name, m), flush=True)
        await forward.close()
        await load_forward.close()
        await load_ssh.close()
        if base is not None:
            await stop_child(base[0])
        if multi is not None:
            await multi.close()
    finally:
        await transport.close()
        sim.terminate()
        sim.wait(timeout=30)
        sshd.stop()

    results_paths = {name for name, _ in results}
    print("\nmedians")
    print("| C | path | TTFT p50 err | ITL p99 err | loop lag p50 ms | p99 | max "
          "| relay CPU µs/token |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for conc in args.concurrency:
        for name in [n for n in args.paths if n in results_paths]:
            runs = results[(name, conc)]
            med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            print(_row("", conc, name, med).replace("|  | ", "| ", 1))
    print("\nminus direct (points, medians of per-run differences); loop lag p99 (median)")
    for conc in args.concurrency:
        dct = results[("direct", conc)]
        parts = []
        for name in [n for n in args.paths if n in results_paths and n != "direct"]:
            fwd = results[(name, conc)]
            pairs = list(zip(fwd, dct, strict=True))
            ttft = statistics.median(f["ttft_p50"] - d["ttft_p50"] for f, d in pairs)
            itl = statistics.median(f["itl_p99"] - d["itl_p99"] for f, d in pairs)
            lag = statistics.median(f["lag_p99"] for f in fwd)
            parts.append(f"{name}: TTFT p50 {ttft:+.1f} pt, ITL p99 {itl:+.1f} pt, "
                         f"lag p99 {lag:.1f} ms")
        lag = statistics.median(d["lag_p99"] for d in dct)
        print(f"C={conc}: " + "; ".join(parts) + f"; direct lag p99 {lag:.1f} ms")

if __name__ == "__main__":
    asyncio.run(main())
