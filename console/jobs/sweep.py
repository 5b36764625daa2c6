"""A concurrency sweep against a target: the one implementation behind `plateau sweep` and the
console's sweep key.

    async with host_target(config, "box") as target:
        finished = await sweep(target, spec, store=store, label=run_label(target, "quick"))

It holds the host's lease for the whole sweep (a --url target has no host to hold), picks the
preset's engine (native on this machine, or SGLang's bench_serving on the host), sends the
server's API key when its profile names one, and commits each finished step to the run store
before the next begins.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass

from console.bench.bench_serving import BenchServingEngine
from console.bench.engines import Engine, NativeEngine
from console.bench.models import SweepEvent, SweepFinished
from console.bench.sweep import run_sweep
from console.config_models import SweepPreset
from console.diagnose.recorder import EvidenceRecorder
from console.diagnose.sources import EvidenceSources, RemoteLog, ScrapedMetrics
from console.errors import PlateauError
from console.host.local import LocalTransport
from console.host.transport import Transport
from console.jobs.target import Target
from console.server.lease import LeaseHolder, host_lease
from console.store.db import RunStore

_HAS_SGLANG = "import importlib.util as u, sys; sys.exit(0 if u.find_spec('sglang') else 3)"


class SweepSetupError(PlateauError):
    """The sweep cannot start (no API key here, SGLang missing on the host, ...)."""


@dataclass(frozen=True)
class EngineOptions:
    """Engine choices a front end may override (the CLI's flags); None: the default."""

    workers: int | None = None
    """Most load-generator processes (native engine)."""
    bench_command: Sequence[str] | None = None
    """bench_serving's command prefix on the host (default: HOST_PYTHON -m sglang...)."""
    tokenizer: str | None = None
    """Tokenizer path on the host for bench_serving (default: the profile's model path)."""
    api_key_env: str | None = None
    """Local variable holding the server's --api-key (default: the profile's)."""
    model: str | None = None
    """The model name requests carry (default: the server's /v1/models, else the profile's
    model path, else what a pinned server's refusal names)."""


DEFAULT_OPTIONS = EngineOptions()


def run_label(target: Target, preset: str | None) -> str:
    """The history label of a sweep nobody named: `PROFILE (PRESET)`."""
    return f"{target.meta.profile or target.base_url} ({preset or 'default'})"


def api_key_headers(target: Target, options: EngineOptions) -> tuple[tuple[str, str], ...]:
    """`Authorization: Bearer KEY` when the server wants a key. The key is read from this
    machine's environment only, never stored or put on a command line."""
    name = options.api_key_env or (target.profile.api_key_env if target.profile else None)
    if not name:
        return ()
    key = os.environ.get(name)
    if not key:
        raise SweepSetupError(f"the server wants an API key, but ${name} is not set here")
    return (("Authorization", f"Bearer {key}"),)


async def make_engine(
    spec: SweepPreset, target: Target, options: EngineOptions = DEFAULT_OPTIONS
) -> Engine:
    """The preset's engine: native (this machine) or SGLang's bench_serving (on the host;
    on this machine for a --url target)."""
    headers = api_key_headers(target, options)
    if spec.engine == "native":
        return NativeEngine(max_workers=options.workers, headers=headers,
                            server=target.engine, model=options.model,
                            fallback_model=target.profile.model_path if target.profile else None)
    if headers:
        raise SweepSetupError(
            "the bench-serving engine can only take an API key on the host's command line or "
            "environment, where other users can read it; use the native engine for this server"
        )
    transport: Transport = target.transport or LocalTransport("localhost")
    python = target.host_python
    if not options.bench_command:
        await _require_sglang(transport, python, target.meta.host or "this machine")
    port = target.host_port
    return BenchServingEngine(
        transport,
        host_base_url=f"http://127.0.0.1:{port}" if port else target.base_url,
        python=python,
        command=list(options.bench_command) if options.bench_command else None,
        tokenizer=options.tokenizer or (target.profile.model_path if target.profile else None),
        workdir=target.host.run_dir if target.host is not None else "/tmp",
    )


async def _require_sglang(transport: Transport, python: str, where: str) -> None:
    result = await transport.run([python, "-c", _HAS_SGLANG], timeout=60.0)
    if result.exit_status == 3:
        raise SweepSetupError(
            f"engine bench-serving needs SGLang on {where}, but {python} cannot import "
            "sglang; set the host's python to the server's environment or use "
            'engine = "native"'
        )
    if not result.ok:
        why = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no output"]
        raise SweepSetupError(f"cannot run {python} on {where}: {why[0][:200]}")


@contextlib.asynccontextmanager
async def _holding(
    target: Target, purpose: str, wait: bool, on_wait: Callable[[LeaseHolder], None] | None
) -> AsyncIterator[None]:
    if target.host is None:  # a bare URL: no host of ours to hold
        yield
        return
    # The lease lives on the host, so other processes (a colleague's console, a headless
    # `plateau server restart`) see it too.
    async with host_lease(target.host.name).hold(
        purpose, wait=wait, transport=target.transport, host=target.host, on_wait=on_wait
    ):
        yield


async def sweep(
    target: Target,
    spec: SweepPreset,
    *,
    store: RunStore | None,
    label: str,
    on_event: Callable[[SweepEvent], None] | None = None,
    options: EngineOptions = DEFAULT_OPTIONS,
    wait: bool = False,
    on_wait: Callable[[LeaseHolder], None] | None = None,
    run_id: int | None = None,
    repeat_base: int = 0,
    finish: bool = True,
    evidence: EvidenceSources | None = None,
) -> SweepFinished:
    """Run `spec` against `target`, holding the host's lease; each step is stored as it ends,
    with its diagnosis evidence (`store.load_evidence(run_id)`). `run_id`, `repeat_base` and
    `finish` append to an existing run (an A/B side's repeats; console.bench.sweep).
    `evidence`: where that evidence comes from (the console passes tees of its session's own
    observers); None: standalone observers of the target (`standalone_sources`)."""
    if spec.endpoint == "generate" and not target.engine.native_endpoint:
        # /generate is SGLang's own; every OpenAI-compatible server has /v1/completions.
        spec = spec.model_copy(update={"endpoint": "completions"})
    async with _holding(target, f"sweep {label}", wait, on_wait), \
            load_url(target, spec) as url:
        engine = await make_engine(spec, target, options)
        headers = api_key_headers(target, options)
        if evidence is None:
            evidence = await standalone_sources(target, headers)
        recorder = EvidenceRecorder(
            evidence, flags=target.meta.flags,
            env=dict(target.profile.env) if target.profile else {}, store=store)
        return await run_sweep(
            spec,
            url,
            engine=engine,
            store=store,
            meta=target.meta.model_copy(update={"label": label}),
            on_event=on_event,
            log_tail=target.log_tail,
            recorder=recorder,
            run_id=run_id,
            repeat_base=repeat_base,
            finish=finish,
            # Only an engine that has a server-info path is asked for one (a GET the server
            # does not have is a 404 line in its log per sweep, for nothing).
            snapshot_server_info=bool(target.engine.server_info_paths),
        )


@contextlib.asynccontextmanager
async def load_url(target: Target, spec: SweepPreset) -> AsyncIterator[str]:
    """Where the native engine sends its load: a host reached over SSH gets a forward of its
    own, relayed by a child process (console/host/forward_proc.py), so thousands of streamed
    events a second never queue on this process's event loop (the UI's); otherwise the
    target's URL."""
    opener = getattr(target.transport, "load_forward_port", None)
    port = target.host_port
    if spec.engine != "native" or opener is None or not port:
        yield target.base_url
        return
    forward = await opener(port)
    try:
        yield f"http://127.0.0.1:{forward.local_port}"
    finally:
        await forward.close()


async def standalone_sources(
    target: Target, headers: Sequence[tuple[str, str]] = ()
) -> EvidenceSources:
    """What the diagnosis will see when nothing else observes the host (the CLI): the
    server's log and a GPU agent on its host (when the target has a host), and `/metrics`
    (when enabled)."""
    log = None
    collector = None
    if target.transport is not None and target.host is not None:
        from console.gpu.collector import AgentOptions, GpuCollector
        from console.server.lifecycle import ServerLifecycle

        with contextlib.suppress(Exception):
            record = await ServerLifecycle(target.transport, target.host).read_record()
            if record is not None and record.log_path:
                log = RemoteLog(target.transport, record.log_path)
        host = target.host
        collector = GpuCollector(target.transport, AgentOptions(
            backend="sim" if host.sim_state_file else "auto", interval=1.0,
            python=host.python, sim_state=host.sim_state_file))
    metrics = ScrapedMetrics(target.base_url, headers) if target.engine.metrics_path else None
    return EvidenceSources(log=log, gpu=collector, metrics=metrics)
