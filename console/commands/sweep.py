"""`plateau sweep [--demo | HOST | --url URL] ...`: a concurrency sweep, printed and stored."""

from __future__ import annotations

import argparse
import contextlib
import json
import shlex
import sys
from collections.abc import AsyncIterator
from typing import Any

from pydantic import ValidationError

from console.bench.arrivals import format_rate
from console.bench.fit_table import terminal_width
from console.bench.knee import knee_of_steps
from console.bench.models import StepFailed, StepFinished, StepPhase, StepStarted, SweepEvent
from console.bench.report import steps_table
from console.bench.summary import run_summary
from console.commands import argtypes
from console.config import load_config
from console.config_models import TRACE_NEEDS_OPEN_LOOP, CostConfig, PlateauConfig, SweepPreset
from console.diagnose.diagnose import diagnose_stored, diagnosis_json, diagnosis_lines
from console.engines import ENGINES
from console.errors import PlateauError, UsageError
from console.jobs import sweep as sweep_jobs
from console.jobs.sweep import EngineOptions, run_label
from console.jobs.target import Target, demo_target, host_target, url_target
from console.server.lease import LeaseHolder
from console.sglang import endpoints
from console.store.db import RunStore
from console.store.export import finite_or_null


def int_list(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.replace(" ", "").split(",") if part]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers like 1,2,4: {text!r}") from None
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError("concurrency values must be positive")
    return values


def _rate_list(text: str) -> list[float]:
    """Request rates like 1,2,4,inf (requests/s; inf: all at once, as bench_serving)."""
    try:
        values = [float(part) for part in text.replace(" ", "").split(",") if part]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected rates like 1,2,4,inf: {text!r}") from None
    if not values or any(not v > 0 for v in values):  # NaN too
        raise argparse.ArgumentTypeError("request rates must be positive (or inf)")
    return values


WORKLOADS = ("random", "shared-prefix", "multi-turn", "long-context", "sharegpt", "trace")


def add_workload_args(p: argparse.ArgumentParser) -> None:
    """What the requests hold and how they arrive (sweep and ab)."""
    g = p.add_argument_group("workload")
    g.add_argument("--workload", choices=WORKLOADS,
                   help="request contents (default random; trace needs --trace FILE)")
    g.add_argument("--trace", dest="trace_file", metavar="FILE",
                   help="Mooncake-format JSONL trace to replay (implies --workload trace)")
    g.add_argument("--prefix-groups", type=argtypes.positive_int,
                   help="shared-prefix: system prompts (bench_serving --gsp-num-groups)")
    g.add_argument("--prompts-per-group", type=argtypes.positive_int,
                   help="shared-prefix: questions per system prompt")
    g.add_argument("--prefix-len", type=argtypes.positive_int,
                   help="shared-prefix: system prompt tokens (questions: --input-len)")
    g.add_argument("--turns", type=argtypes.int_at_least(1, 1000),
                   help="multi-turn: turns per conversation")
    g.add_argument("--request-rate", type=_rate_list,
                   help="open loop: one step per rate in requests/s, e.g. 1,2,4,inf")
    g.add_argument("--burstiness", type=argtypes.float_at_least(0.0, exclusive=True),
                   help="gamma arrivals (1: Poisson, <1 burstier); with --request-rate")
    g.add_argument("--max-concurrency", type=argtypes.int_at_least(1, 65536),
                   help="with --request-rate: at most this many requests in flight")


WORKLOAD_FIELDS = ("workload", "trace_file", "prefix_groups", "prompts_per_group",
                   "prefix_len", "turns", "request_rate", "burstiness", "max_concurrency")


def workload_updates(args: argparse.Namespace) -> dict[str, Any]:
    updates = {name: getattr(args, name) for name in WORKLOAD_FIELDS
               if getattr(args, name, None) is not None}
    if updates.get("trace_file") and "workload" not in updates:
        updates["workload"] = "trace"
    return updates


def check_trace(args: argparse.Namespace) -> None:
    """A --trace file read and checked before anything starts (a demo server, the host's
    lease, a stored run): a bad one is one line, not a failed step after the start."""
    if not getattr(args, "trace_file", None):
        return
    from console.bench.workload import load_trace

    try:
        load_trace(args.trace_file)
    except ValueError as exc:
        raise UsageError(f"--trace: {exc}") from None
    # Without a preset or a host's config, nothing else can give the open loop a trace needs
    # (SweepPreset refuses the closed loop too, once the preset is known).
    open_loop = getattr(args, "max_concurrency", None) or getattr(args, "request_rate", None)
    if not (open_loop or getattr(args, "preset", None) or getattr(args, "host", None)):
        raise UsageError(f"--trace: {TRACE_NEEDS_OPEN_LOOP}")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "sweep",
        help="run a concurrency sweep and store it",
        description="Throughput vs concurrency against an SGLang server. Prints a table "
        "(or --json) and stores the run in the history database.",
    )
    target = p.add_argument_group("target (one of)")
    target.add_argument("host", nargs="?", help="config host (port from its profile)")
    target.add_argument("--demo", action="store_true", help="start the demo simulator and sweep it")
    target.add_argument("--url", type=argtypes.http_url,
                        help="server base URL, e.g. http://127.0.0.1:30000")
    p.add_argument("--profile", type=argtypes.plain_text,
                   help="with HOST: the profile whose port to use; with --demo: "
                   "the profile to start (default: the host's profile)")
    p.add_argument("--preset", type=argtypes.plain_text, default=None,
                   help="sweep preset from the config [sweeps.NAME]")
    p.add_argument("--wait", action="store_true",
                   help="queue behind a restart/sweep holding the host instead of refusing")
    p.add_argument("--concurrency", type=int_list, help="e.g. 1,2,4,8")
    p.add_argument("--input-len", type=argtypes.positive_int)
    p.add_argument("--output-len", type=argtypes.positive_int)
    p.add_argument("--num-prompts", type=argtypes.positive_int,
                   help="requests per step (default C x prompts_per_c)")
    p.add_argument("--step-seconds", type=argtypes.seconds,
                   help="time box per step instead of a count")
    p.add_argument("--repeats", type=argtypes.int_at_least(1, 20))
    p.add_argument("--warmup", type=argtypes.count, dest="warmup_prompts",
                   help="warmup requests per step")
    p.add_argument("--endpoint", choices=["generate", "completions", "chat"])
    p.add_argument("--no-flush", action="store_true",
                   help=f"do not POST {endpoints.FLUSH_CACHE} per step")
    p.add_argument("--stop-on-failure", action="store_true")
    p.add_argument("--slo", type=argtypes.slo, metavar="KEY=MS,...",
                   help="latency SLO, e.g. ttft_p99_ms=500,itl_p99_ms=50,e2e_p99_ms=20000: "
                   "per step the share of requests meeting it, goodput (req/s meeting it, as "
                   "SGLang's bench_serving --goodput counts it) and the highest concurrency "
                   "whose p99s meet it")
    add_workload_args(p)
    p.add_argument("--engine", choices=["native", "bench-serving"])
    p.add_argument("--bench-command", type=argtypes.command_words,
                   help="bench_serving command prefix on the host "
                   "(default: HOST_PYTHON -m sglang.benchmark.serving)")
    p.add_argument("--tokenizer", help="tokenizer path on the host (bench-serving engine)")
    p.add_argument("--server-engine", choices=sorted(ENGINES),
                   help="the inference engine behind --url (default: asked of the server: "
                   f"SGLang answers {endpoints.SERVER_INFO}, anything else is openai)")
    p.add_argument("--model", type=argtypes.plain_text,
                   help="the model name requests carry (default: the server's /v1/models, "
                   "else the profile's model path)")
    p.add_argument("--workers", type=argtypes.int_at_least(1, 256),
                   help="max load-generator processes (native engine)")
    p.add_argument("--api-key-env", metavar="VAR",
                   help="local environment variable holding the server's --api-key "
                   "(default: the profile's api_key_env)")
    p.add_argument("--label", type=argtypes.plain_text, default="",
                   help="a name for this run in history")
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
        "slo",
    ):
        value = getattr(args, name, None)
        if value is not None:
            updates[name] = value
    updates.update(workload_updates(args))
    if getattr(args, "no_flush", False):
        updates["flush_cache"] = False
    if getattr(args, "stop_on_failure", False):
        updates["stop_on_failure"] = True
    try:
        return SweepPreset.model_validate({**base.model_dump(), **updates})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        setting = f" {where}" if where else ""  # a rule over several settings names none
        raise UsageError(f"invalid sweep setting{setting}: {first['msg']}") from None


@contextlib.asynccontextmanager
async def _open_target(
    args: argparse.Namespace, config: PlateauConfig | None
) -> AsyncIterator[tuple[Target, PlateauConfig | None]]:
    """The target, and the config its presets come from (the demo's own for --demo)."""
    if args.demo:
        async with demo_target(args.profile) as (target, demo_config):
            yield target, demo_config
    elif args.url:
        async with url_target(args.url, args.server_engine) as target:
            yield target, config
    else:
        assert config is not None
        async with host_target(config, args.host, args.profile) as target:
            yield target, config


async def _require_reachable(url: str) -> None:
    """A --url that nothing answers at is said before anything is stored (a failed run with
    an 11-item "no clear cause" said nothing the operator did not know; issue 26.9)."""
    from console.bench.server_probe import server_gone

    why = await server_gone(url)
    if why is not None:
        raise PlateauError(f"no server answers at {url} ({why}); nothing was run or stored")


def engine_options(args: argparse.Namespace) -> EngineOptions:
    return EngineOptions(
        workers=args.workers,
        bench_command=shlex.split(args.bench_command) if args.bench_command else None,
        tokenizer=args.tokenizer,
        api_key_env=args.api_key_env,
        model=args.model,
    )


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f} ms"


def print_progress(event: SweepEvent) -> None:
    if isinstance(event, StepStarted):
        level = f"concurrency {event.concurrency}" if event.rate is None else (
            f"request rate {format_rate(event.rate)}"
            + (f", at most {event.concurrency} in flight" if event.concurrency else ""))
        print(
            f"step {event.index + 1}/{event.total_steps}: {level}"
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
            f"TTFT p50 {_ms(m.ttft_ms.p50)}, {m.errors} error(s)"
            + (f", {m.cached_tokens / m.input_tokens:.0%} of prompt tokens from the prefix "
               "cache" if m.input_tokens and m.cached_tokens >= 0.01 * m.input_tokens else ""),
            file=sys.stderr,
            flush=True,
        )
        if m.client_warning:
            print(f"  warning: {m.client_warning}", file=sys.stderr, flush=True)
        for note in m.client_notes if event.result.index == 0 and not event.result.repeat else ():
            print(f"  note: {note}", file=sys.stderr, flush=True)
        if warmed := m.warmup_text():
            print(f"  {warmed} (left out of the steady figures)", file=sys.stderr, flush=True)
    elif isinstance(event, StepFailed):
        print(f"  FAILED: {event.result.error}", file=sys.stderr, flush=True)


def _server_info(store: RunStore, run_id: int | None) -> dict[str, Any] | None:
    """What /server_info said when the run started (its GPUs for tok/s per GPU)."""
    if run_id is None:
        return None
    try:
        return store.get_run(run_id).summary.meta.server_info
    except (KeyError, PlateauError):
        return None


def _cost(args: argparse.Namespace, config: PlateauConfig | None) -> CostConfig | None:
    """`[cost]` from the config the sweep used, else the user's (a --demo sweep loads none);
    a config that cannot be read prices nothing here (the sweep already ran)."""
    if config is not None:
        return config.cost
    with contextlib.suppress(PlateauError):
        return load_config(args.config).config.cost
    return None


def _say_waiting(holder: LeaseHolder) -> None:
    print(f"waiting: the host is busy with {holder.describe()}", file=sys.stderr, flush=True)


async def _handle(args: argparse.Namespace) -> int:
    chosen = sum(bool(x) for x in (args.demo, args.host, args.url))
    if chosen != 1:
        raise UsageError("say where to sweep: --demo, a HOST from the config, or --url URL")
    check_trace(args)
    if args.url:
        await _require_reachable(args.url)
    config: PlateauConfig | None = None
    if args.preset or args.host:
        config = load_config(args.config).config
        if args.preset and args.preset not in config.sweeps:
            known = ", ".join(config.sweeps) or "none"
            raise UsageError(f"unknown sweep preset {args.preset!r} (known: {known})")
    store = RunStore(args.db)
    try:
        async with _open_target(args, config) as (target, presets):
            # --demo without --preset: the demo's own quick preset.
            # --demo without --preset: the reference run (console/demo.py).
            preset = args.preset or "default"
            source = config if args.preset else presets
            base = source.sweep(preset) if source is not None else SweepPreset()
            spec = build_spec(base, args)
            outcome = await sweep_jobs.sweep(
                target,
                spec,
                store=store,
                label=args.label or run_label(target, preset),
                on_event=None if args.json else print_progress,
                options=engine_options(args),
                wait=args.wait,
                on_wait=_say_waiting,
            )
        diagnosis = diagnose_stored(store, outcome.run_id, outcome.steps)
        server_info = _server_info(store, outcome.run_id)
    finally:
        store.close()
    knee = knee_of_steps(outcome.steps)
    summary = run_summary(outcome.steps, spec, outcome.run_id, _cost(args, config), server_info)
    if args.json:
        print(
            json.dumps(
                finite_or_null(
                    {
                        "run_id": outcome.run_id,
                        "status": outcome.status,
                        "knee": knee.sentence,
                        "spec": spec.model_dump(mode="json"),
                        "steps": [s.model_dump(mode="json") for s in outcome.steps],
                        **summary.json(),
                        "diagnosis": diagnosis_json(diagnosis),
                    }
                ),
                allow_nan=False,
            )
        )
    else:
        print(steps_table(outcome.steps, summary.cost, terminal_width()))
        print(f"\nknee: {knee.sentence}")
        for line in summary.lines():
            print(line)
        for line in diagnosis_lines(diagnosis):
            print(line)
        print(f"stored as run {outcome.run_id} ({outcome.status}) in {store.path}")
    if outcome.reason:
        print(f"plateau: {outcome.reason}", file=sys.stderr)
    failed = sum(1 for s in outcome.steps if s.status != "ok")
    if failed:
        print(f"plateau: {failed} of {len(outcome.steps)} step(s) failed", file=sys.stderr)
    return 0 if outcome.status == "finished" and not failed else 1
