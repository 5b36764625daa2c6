"""How long each restart phase takes against the simulator, and what dominates it.

    .venv/bin/python tests/bench/bench_server_restart.py [--restarts 5] [--startup 0] [--no-ssh]

Restarts alternate between two profiles (triton / cutlass MoE runner) through LocalTransport
and through a real sshd on loopback (the test fixture's recipe). Per phase it prints the
median and max; as peers it times one bare `true` and one host-helper call on each
transport, since the stop/verify/launch phases are a handful of those round trips.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from console.config_models import HostConfig
from console.host.local import LocalTransport
from console.host.transport import Transport
from console.server.events import LifecycleDone, LifecycleEvent, PhaseProgress
from console.server.hostscript import run_host_script
from tests.support.server_fixtures import ServerEnv, free_port

PHASES = ["validate", "stop", "verify-stopped", "launch", "startup", "ready", "total"]


async def peer_costs(transport: Transport, python: str, n: int = 10) -> dict[str, float]:
    out: dict[str, float] = {}
    for label, call in (
        ("`true`", lambda: transport.run(["true"])),
        ("host helper", lambda: run_host_script(transport, python, "probe", {"pid": 1})),
        ("is_alive", lambda: transport.is_alive(1)),
    ):
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            await call()
            times.append(time.perf_counter() - t0)
        out[label] = statistics.median(times)
    return out


async def bench(transport: Transport, label: str, restarts: int, startup: float) -> None:
    root = Path(tempfile.mkdtemp(prefix="plateau-bench-restart-"))
    host = HostConfig(name="bench", local=True, python=sys.executable, run_dir=str(root / "run"))
    env = ServerEnv(root=root, port=free_port(), host=host, cache_dir=root / "cache")
    life = env.lifecycle(transport, poll_interval_s=0.05)
    timings: list[dict[str, float]] = []
    startup_steps: list[list[tuple[str, float]]] = []
    first_validate = 0.0
    for i in range(restarts + 1):
        backend = "triton" if i % 2 == 0 else "cutlass"
        steps: list[tuple[str, float]] = []
        t0 = time.monotonic()

        def sink(event: LifecycleEvent, steps: list[tuple[str, float]] = steps,
                 t0: float = t0) -> None:
            if isinstance(event, LifecycleDone):
                timings.append(event.timings)
            elif isinstance(event, PhaseProgress) and event.step is not None:
                steps.append((event.step.value, time.monotonic() - t0))

        profile = env.profile(startup_seconds=startup, **{"moe-runner-backend": backend})
        await life.restart(backend, profile, sink)
        startup_steps.append(steps)
        if i == 0:
            first_validate = timings.pop(0)["validate"]  # cold: runs --help, fills the cache
    await life.stop()
    peers = await peer_costs(transport, sys.executable)
    print(f"\n== {label}: {restarts} restarts, sim startup {startup:g} s ==")
    print(f"{'phase':16} {'median s':>9} {'max s':>8} {'share':>6}")
    total = statistics.median(t["total"] for t in timings)
    for phase in PHASES:
        values = [t.get(phase, 0.0) for t in timings]
        med = statistics.median(values)
        share = "" if phase == "total" else f"{med / total * 100:5.1f}%"
        print(f"{phase:16} {med:9.3f} {max(values):8.3f} {share:>6}")
    print(f"cold validate (runs `--help`, then cached): {first_validate:.3f} s")
    print("peer round trips (median): " + ", ".join(f"{k} {v * 1000:.1f} ms"
                                                     for k, v in peers.items()))
    helper = peers["host helper"]
    print(f"restart total / host-helper call = {total / helper:.0f}x")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--restarts", type=int, default=5)
    parser.add_argument("--startup", type=float, default=0.0, help="--sim-startup-seconds")
    parser.add_argument("--no-ssh", action="store_true")
    args = parser.parse_args()
    local = LocalTransport("bench-local")
    await local.connect()
    await bench(local, "LocalTransport", args.restarts, args.startup)
    if args.no_ssh:
        return
    from tests.support.host_fixtures import make_ssh_transport
    from tests.support.sshd import start_sshd

    sshd = start_sshd(Path(tempfile.mkdtemp(prefix="plateau-bench-sshd-")))
    try:
        ssh = make_ssh_transport(sshd)
        await ssh.connect()
        try:
            await bench(ssh, "SshTransport (real sshd, loopback)", args.restarts, args.startup)
        finally:
            await ssh.close()
    finally:
        sshd.stop()


if __name__ == "__main__":
    asyncio.run(main())
