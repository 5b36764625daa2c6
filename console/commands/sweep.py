"""`plateau sweep [--demo | HOST | --url URL] ...`: a concurrency sweep, printed and stored."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shlex
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from pydantic import ValidationError

from console.bench.bench_serving import BenchServingEngine
from console.bench.engines import Engine, NativeEngine
from console.bench.knee import knee_of_steps
from console.bench.models import StepFailed, StepFinished, StepPhase, StepStarted, SweepEvent
from console.bench.report import steps_table
from console.bench.sweep import LogTail, run_sweep
from console.config_models import SweepPreset
from console.errors import PlateauError, UsageError
from console.host.transport import DetachedProcess, PortForward, Transport
from console.server.lease import LeaseHolder, host_lease
from console.store.db import RunStore
from console.store.export import _finite
from console.store.models import RunMeta

DEMO_PROFILE = "cutlass-moe"


def _int_list(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.replace(" ", "").split(",") if part]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers like 1,2,4: {text!r}") from None
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError("concurrency values must be positive")
    return values


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep",
        help="run a concurrency sweep and store it",
        description="Throughput vs concurrency against an SGLang server. Prints a table "
        "(or --json) and stores the run in the history database.",
    )
    target = p.add_argument_group("target (one of)")
    target.add_argument("host", nargs="?", help="config host (port from its profile)")
    target.add_argument("--demo", action="store_true", help="start the demo simulator and sweep it")
    target.add_argument("--url", help="server base URL, e.g. http://127.0.0.1:30000")
    p.add_argument("--profile", help="profile whose port to use (default: the host's profile)")
    p.add_argument("--preset", default=None, help="sweep preset from the config [sweeps.NAME]")
    p.add_argument("--concurrency", type=_int_list, help="e.g. 1,2,4,8")
    p.add_argument("--input-len", type=int)
    p.add_argument("--output-len", type=int)
    p.add_argument("--num-prompts", type=int, help="requests per step (default C x prompts_per_c)")
    p.add_argument("--step-seconds", type=float, help="time box per step instead of a count")
    p.add_argument("--repeats", type=int)
    p.add_argument("--warmup", type=int, dest="warmup_prompts", help="warmup requests per step")
    p.add_argument("--endpoint", choices=["generate", "completions", "chat"])
    p.add_argument("--no-flush", action="store_true", help="do not POST /flush_cache per step")
    p.add_argument("--stop-on-failure", action="store_true")
    p.add_argument("--engine", choices=["native", "bench-serving"])
    p.add_argument("--bench-command", help="bench_serving command prefix on the host "
                   "(default: HOST_PYTHON -m sglang.benchmark.serving)")
    p.add_argument("--tokenizer", help="tokenizer path on the host (bench-serving engine)")
    p.add_argument("--workers", type=int, help="max load-generator processes (native engine)")
    p.add_argument("--api-key-env", metavar="VAR",
                   help="local environment variable holding the server's --api-key "
                   "(default: the profile's api_key_env)")
    p.add_argument("--wait", action="store_true",
                   help="queue behind a restart/sweep holding the host instead of refusing")
    p.add_argument("--label", default="", help="a name for this run in history")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--db", help="history database (else $PLATEAU_DB, else the user data dir)")
    p.set_defaults(handler=_handle)


def build_spec(base: SweepPreset, args: argparse.Namespace) -> SweepPreset:
    """The preset with the command-line overrides applied (validated again)."""
    updates: dict[str, Any] = {}
    for name in (
        "concurrency",
        "input_len",
        "output_len",
        "num_prompts",
        "step_seconds",
        "repeats",
        "warmup_prompts",
        "endpoint",
        "engine",
    ):
        value = getattr(args, name, None)
        if value is not None:
            updates[name] = value
    if getattr(args, "no_flush", False):
        updates["flush_cache"] = False
    if getattr(args, "stop_on_failure", False):
        updates["stop_on_failure"] = True
    try:
        return SweepPreset.model_validate({**base.model_dump(), **updates})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise UsageError(f"invalid sweep setting {where}: {first['msg']}") from None


@dataclass
class Target:
    base_url: str
    meta: RunMeta
    transport: Transport | None = None
    host_port: int | None = None
    host_python: str = "python3"
    log_tail: LogTail | None = None
    api_key_env: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


async def _wait_ready(base_url: str, timeout: float, process_alive: Any = None) -> None:
    deadline = time.monotonic() + timeout
    async with httpx.AsyncClient(timeout=2) as client:
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if (await client.get(base_url + "/ready")).status_code == 200:
                    return
            if process_alive is not None and not await process_alive():
                raise PlateauError("the demo simulator exited before it was ready")
            await asyncio.sleep(0.1)
    raise PlateauError(f"server at {base_url} not ready after {timeout:.0f} s")


def _file_tail(path: Path) -> LogTail:
    def tail() -> list[str]:
        try:
            with path.open("rb") as handle:
                handle.seek(0, 2)
                handle.seek(max(0, handle.tell() - 16384))
                return handle.read().decode("utf-8", "replace").splitlines()[-20:]
        except OSError:
            return []

    return tail


@contextlib.asynccontextmanager
async def demo_target(
    spec_out: list[SweepPreset] | None = None, wait: bool = False
) -> AsyncIterator[Target]:
    """Start the demo simulator on this machine for the duration, then stop it."""
    from console.demo import demo_config
    from console.host.local import LocalTransport

    with tempfile.TemporaryDirectory(prefix="plateau-demo-") as tmp:
        run_dir = Path(tmp)
        config = demo_config(run_dir, startup_seconds=0)
        profile = config.profiles[DEMO_PROFILE]
        transport = LocalTransport("demo")
        await transport.connect()
        async with contextlib.AsyncExitStack() as stack:
            stack.push_async_callback(transport.close)
            # The same host-side lease as a real host (here in the demo's run dir).
            await stack.enter_async_context(host_lease("demo").hold(
                f"sweep {DEMO_PROFILE} (demo)", wait=wait, transport=transport,
                host=config.host("demo"), on_wait=_say_waiting,
            ))
            log_path = run_dir / "sim.log"
            process = await transport.start_detached(profile.argv(), log_path=str(log_path))
            stack.push_async_callback(_stop_demo, transport, process)
            base_url = f"http://127.0.0.1:{profile.port}"
            await _wait_ready(base_url, 60, lambda: transport.is_alive(process.pid))
            if spec_out is not None:
                spec_out.append(config.sweep("quick"))
            yield Target(
                base_url=base_url,
                meta=RunMeta(
                    host="demo",
                    profile=DEMO_PROFILE,
                    flags=dict(profile.flags),
                    server_url=base_url,
                ),
                transport=transport,
                host_port=profile.port,
                host_python=sys.executable,
                log_tail=_file_tail(log_path),
            )


async def _stop_demo(transport: Transport, process: DetachedProcess) -> None:
    await transport.signal_group(process.pgid, "TERM")
    for _ in range(50):
        if not await transport.is_alive(process.pid):
            return
        await asyncio.sleep(0.1)
    await transport.signal_group(process.pgid, "KILL")


@contextlib.asynccontextmanager
async def host_target(args: argparse.Namespace) -> AsyncIterator[Target]:
    """A configured host: the server port from its profile, reached through a port forward."""
    from console.config import load_config
    from console.host.factory import transport_for

    config = load_config(args.config).config
    try:
        host = config.host(args.host)
    except KeyError as exc:
        raise UsageError(str(exc.args[0])) from None
    profile_name = args.profile or host.profile
    if not profile_name or profile_name not in config.profiles:
        raise UsageError(
            f"host {host.name!r} has no profile; pass --profile NAME to say which port to use"
        )
    profile = config.profiles[profile_name]
    transport = transport_for(host)
    await transport.connect()
    try:
        async with host_lease(host.name).hold(
            f"sweep {profile_name}", wait=args.wait, transport=transport, host=host,
            on_wait=_say_waiting,
        ), _forward(transport, profile.port) as forward:
            yield Target(
                base_url=f"http://127.0.0.1:{forward.local_port}",
                meta=RunMeta(
                    host=host.name, profile=profile_name, flags=dict(profile.flags)
                ),
                transport=transport,
                host_port=profile.port,
                host_python=host.python,
                log_tail=_server_log_tail(transport, host),
                api_key_env=profile.api_key_env,
            )
    finally:
        await transport.close()


@contextlib.asynccontextmanager
async def _forward(transport: Transport, port: int) -> AsyncIterator[PortForward]:
    forward = await transport.forward_port(port)
    try:
        yield forward
    finally:
        await forward.close()


def _say_waiting(holder: LeaseHolder) -> None:
    print(f"waiting: the host is busy with {holder.describe()}", file=sys.stderr, flush=True)


def _server_log_tail(transport: Transport, host: Any) -> LogTail:
    async def tail() -> Sequence[str]:
        from console.server.lifecycle import ServerLifecycle

        lifecycle = ServerLifecycle(transport, host)
        record = await lifecycle.read_record()
        if record is None or not record.log_path:
            return []
        return (await lifecycle.read_log_tail(record.log_path, 16384))[-20:]

    return tail


@contextlib.asynccontextmanager
async def url_target(url: str) -> AsyncIterator[Target]:
    yield Target(base_url=url.rstrip("/"), meta=RunMeta(server_url=url.rstrip("/")))


def auth_headers(target: Target, args: argparse.Namespace) -> tuple[tuple[str, str], ...]:
    """`Authorization: Bearer KEY` when the server wants a key (read from the local env only,
    never stored)."""
    name = getattr(args, "api_key_env", None) or target.api_key_env
    if not name:
        return ()
    key = os.environ.get(name)
    if not key:
        raise UsageError(f"the server wants an API key, but ${name} is not set here")
    return (("Authorization", f"Bearer {key}"),)


def make_engine(spec: SweepPreset, target: Target, args: argparse.Namespace) -> Engine:
    headers = auth_headers(target, args)
    if spec.engine == "native":
        return NativeEngine(max_workers=getattr(args, "workers", None), headers=headers)
    if headers:
        raise UsageError(
            "the bench-serving engine can only take an API key on the host's command line or "
            "environment, where other users can read it; use --engine native for this server"
        )
    transport = target.transport
    if transport is None:
        from console.host.local import LocalTransport

        transport = LocalTransport("localhost")  # --url: run bench_serving on this machine
    port = target.host_port
    host_url = f"http://127.0.0.1:{port}" if port else target.base_url
    command = shlex.split(args.bench_command) if getattr(args, "bench_command", None) else None
    return BenchServingEngine(
        transport,
        host_base_url=host_url,
        python=target.host_python,
        command=command,
        tokenizer=getattr(args, "tokenizer", None),
    )


def _progress(event: SweepEvent) -> None:
    if isinstance(event, StepStarted):
        print(
            f"step {event.index + 1}/{event.total_steps}: concurrency {event.concurrency}"
            + (f" (repeat {event.repeat + 1})" if event.repeat else ""),
            file=sys.stderr,
            flush=True,
        )
    elif isinstance(event, StepPhase) and event.phase != "output":
        print(f"  {event.phase}: {event.detail}", file=sys.stderr, flush=True)
    elif isinstance(event, StepFinished) and event.result.metrics:
        m = event.result.metrics
        print(
            f"  done: {m.total_tok_s:,.1f} total tok/s, {m.output_tok_s:,.1f} output tok/s, "
            f"TTFT p50 {m.ttft_ms.p50 or 0:.1f} ms, {m.errors} error(s)",
            file=sys.stderr,
            flush=True,
        )
        if m.client_warning:
            print(f"  warning: {m.client_warning}", file=sys.stderr, flush=True)
    elif isinstance(event, StepFailed):
        print(f"  FAILED: {event.result.error}", file=sys.stderr, flush=True)


async def _handle(args: argparse.Namespace) -> int:
    chosen = sum(bool(x) for x in (args.demo, args.host, args.url))
    if chosen != 1:
        raise UsageError("say where to sweep: --demo, a HOST from the config, or --url URL")
    base = SweepPreset()
    if args.preset or args.host:
        from console.config import load_config

        config = load_config(args.config).config
        if args.preset and args.preset not in config.sweeps:
            known = ", ".join(config.sweeps) or "none"
            raise UsageError(f"unknown sweep preset {args.preset!r} (known: {known})")
        base = config.sweep(args.preset or "default")
    demo_spec: list[SweepPreset] = []
    if args.demo:
        context = demo_target(demo_spec, wait=args.wait)
    elif args.url:
        context = url_target(args.url)
    else:
        context = host_target(args)
    store = RunStore(args.db)
    try:
        async with context as target:
            if args.demo and not args.preset:
                base = demo_spec[0]
            spec = build_spec(base, args)
            meta = target.meta.model_copy(update={"label": args.label})
            outcome = await run_sweep(
                spec,
                target.base_url,
                engine=make_engine(spec, target, args),
                store=store,
                meta=meta,
                on_event=None if args.json else _progress,
                log_tail=target.log_tail,
            )
    finally:
        store.close()
    knee = knee_of_steps(outcome.steps)
    if args.json:
        print(
            json.dumps(
                _finite(
                    {
                        "run_id": outcome.run_id,
                        "status": outcome.status,
                        "knee": knee.sentence,
                        "spec": spec.model_dump(mode="json"),
                        "steps": [s.model_dump(mode="json") for s in outcome.steps],
                    }
                ),
                allow_nan=False,
            )
        )
    else:
        print(steps_table(outcome.steps))
        print(f"\nknee: {knee.sentence}")
        print(f"stored as run {outcome.run_id} ({outcome.status}) in {store.path}")
    failed = sum(1 for s in outcome.steps if s.status != "ok")
    if failed:
        print(f"plateau: {failed} of {len(outcome.steps)} step(s) failed", file=sys.stderr)
    return 0 if outcome.status == "finished" and not failed else 1
