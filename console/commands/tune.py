"""`plateau tune (--demo | HOST) [--profile P] [--preset NAME | workload options]
[--objective total|output|goodput|tok-per-joule] [--slo KEY=MS,...] [--target VALUE]
[--budget N | --minutes M] [--json] [--resume [ID]] [--report ID]`:
an explained, closed-loop flag search (console/jobs/tune.py). Prints the ladder (step, cause,
change, verdict at the knee, cumulative gain, restarts, minutes), stores it with the runs, and
saves the kept profile as `profiles.d/<profile>-tuned.toml`."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import signal
import sys
from pathlib import Path
from typing import Any

from console.bench.slo import slo_text
from console.commands import argtypes
from console.commands.ab import host_lifecycle
from console.commands.sweep import build_spec, int_list
from console.config import LoadedConfig
from console.config_models import PlateauConfig, ServerProfile
from console.demo import DEMO_HOST, DEMO_STARTUP_S, temp_demo
from console.demo_user import demo_with_user, is_sim_profile, onto_this_run
from console.errors import UsageError
from console.jobs.tune import load_state, new_state, run_tune, tuned_comment, tuned_profile
from console.jobs.tune_bench import HostBench
from console.jobs.tune_models import TuneProgress, TuneRequest, TuneState, ladder_rows, state_json
from console.jobs.tune_objective import DEFAULT_OBJECTIVE, OBJECTIVES, value_text
from console.session.profiles import ProfileSaveError, profiles_dir, save_profile
from console.store.db import RunStore
from console.store.export import finite_or_null

DEMO_PROFILE = "cutlass-moe"  # the reference profile: plateau at ~806 total tok/s at 128


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "tune",
        help="search flags guided by the diagnosis; keep only changes an A/B proves better",
        description="Sweep the profile, diagnose why it plateaus, A/B the top cause's "
        "suggested change (interleaved, repeats, at the level where the cause acts), keep it "
        "only on a real 'better' verdict, re-diagnose, repeat. Saves the kept profile as "
        "profiles.d/<profile>-tuned.toml.",
    )
    target = p.add_argument_group("target (one of)")
    target.add_argument("host", nargs="?", help="config host whose server to tune")
    target.add_argument("--demo", action="store_true", help="the demo simulator on this machine")
    p.add_argument("--profile", type=argtypes.plain_text,
                   help=f"the starting profile (default: the host's; demo: {DEMO_PROFILE})")
    p.add_argument("--preset", type=argtypes.plain_text, help="sweep preset (default: default)")
    p.add_argument("--concurrency", type=int_list, help="override the preset's levels")
    p.add_argument("--input-len", type=argtypes.positive_int)
    p.add_argument("--output-len", type=argtypes.positive_int)
    p.add_argument("--num-prompts", type=argtypes.positive_int, help="requests per step")
    p.add_argument("--objective", choices=list(OBJECTIVES), default=DEFAULT_OBJECTIVE,
                   help="what a change must raise: "
                   + "; ".join(f"{o.name}: {o.help}" for o in OBJECTIVES.values())
                   + f" (default {DEFAULT_OBJECTIVE})")
    p.add_argument("--slo", type=argtypes.slo, metavar="KEY=MS,...",
                   help="latency SLO of every sweep, as sweep's --slo (e.g. "
                   "ttft_p99_ms=500,itl_p99_ms=50,e2e_p99_ms=20000); goodput needs one")
    p.add_argument("--target", type=float, metavar="VALUE",
                   help="stop once the objective at the top level reaches this, in its unit "
                   "(tok/s, req/s for goodput, tok/J)")
    budget = p.add_mutually_exclusive_group()
    budget.add_argument("--budget", type=argtypes.int_at_least(1, 10000), metavar="N",
                        help="at most N server restarts")
    budget.add_argument("--minutes", type=float, metavar="M", help="at most M minutes")
    p.add_argument("--ab-repeats", type=argtypes.int_at_least(2, 10), default=2,
                   help="repeats per side of each A/B, interleaved (default 2)")
    p.add_argument("--resume", nargs="?", const=0, type=int, metavar="ID",
                   help="continue the newest unfinished tune of the host (or tune ID)")
    p.add_argument("--report", type=int, metavar="ID", help="print a stored tune's ladder")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--db", help="history database (else $PLATEAU_DB, else the user data dir)")
    p.set_defaults(handler=_handle)


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _on_progress(p: TuneProgress) -> None:
    if p.message:
        _say(f"[{p.stage}] {p.message}")


def _request(args: argparse.Namespace, config: PlateauConfig, host: str) -> TuneRequest:
    name = args.profile or (DEMO_PROFILE if args.demo else config.host(host).profile)
    if not name or name not in config.profiles:
        known = ", ".join(sorted(config.profiles)) or "none"
        raise UsageError(f"unknown profile {name!r} (known: {known}); pass --profile NAME")
    preset = args.preset or "default"
    if preset not in config.sweeps:
        raise UsageError(f"unknown sweep preset {preset!r} (known: {', '.join(config.sweeps)})")
    if args.minutes is not None and not 0 < args.minutes < 100000:
        raise UsageError("--minutes must be a positive number")
    spec = build_spec(config.sweep(preset), args)
    if OBJECTIVES[args.objective].needs_slo and spec.slo is None:
        raise UsageError(f"--objective {args.objective} needs an SLO: pass --slo "
                         "ttft_p99_ms=...,itl_p99_ms=...,e2e_p99_ms=... (or a preset with slo)")
    return TuneRequest(host=host, profile=name, preset=preset, spec=spec,
                       objective=args.objective, budget_restarts=args.budget,
                       budget_minutes=args.minutes, repeats=args.ab_repeats,
                       target=args.target)


def _resumed(store: RunStore, args: argparse.Namespace, host: str,
             config: PlateauConfig) -> tuple[TuneState, int]:
    tune_id = args.resume or store.latest_tune(host, unfinished=True)
    if not tune_id:
        raise UsageError(f"no unfinished tune of {host} in {store.path} to resume")
    state = load_state(store, tune_id)
    if state.request.host != host:
        raise UsageError(f"tune {tune_id} is of host {state.request.host!r}, not {host!r}")
    base = config.profiles.get(state.request.profile)
    if base is not None and is_sim_profile(state.start):  # a demo: this run's port and files
        state.start = onto_this_run(state.start, base)
    return state, tune_id


TUNE_DEMO_STARTUP_S = 0.0
"""The demo's simulated start-up in a tune (every A/B restarts it): the tune's, not saved."""


def _save(state: TuneState, directory: Path, tune_id: int | None, *, demo: bool) -> str | None:
    if not any(r.outcome == "kept" for r in state.ladder):
        return None
    profile = tuned_profile(state)
    if demo:
        profile = _off_this_demo(profile)
    try:
        path, _skipped = save_profile(directory, f"{state.request.profile}-tuned", profile,
                                      tuned_comment(state, tune_id))
    except ProfileSaveError as exc:
        _say(f"plateau: the tuned profile was not saved: {exc}")
        return None
    return str(path)


def _off_this_demo(profile: ServerProfile) -> ServerProfile:
    """A demo tune's profile as the operator's demo has it: the port this run picked and
    the start-up it skipped are the tune's (the demo moves a saved profile onto its own
    port when it loads it, console.demo_user)."""
    if not is_sim_profile(profile):
        return profile
    flags = dict(profile.flags)
    if flags.get("sim-startup-seconds") == TUNE_DEMO_STARTUP_S:
        flags["sim-startup-seconds"] = DEMO_STARTUP_S
    return profile.model_copy(update={"flags": flags,
                                      "port": ServerProfile.model_fields["port"].default})


def _print_ladder(state: TuneState, tune_id: int | None) -> None:
    rows = ladder_rows(state)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    for r in state.ladder:
        if r.outcome != "kept":
            print(f"step {r.step} {r.outcome}: {r.reason}")
        for note in r.interacts:
            print(f"step {r.step} note: {r.cause} {note}")
    for note in state.notes:
        print(f"note: {note}")
    top = max(state.start_value, default=None)
    goal = state.request.goal
    if top is not None and top in state.value:
        print(f"{goal.label} at {top}: {value_text(state.start_value[top], goal)} at the "
              f"start, {value_text(state.value[top], goal)} now (one sweep each); kept "
              f"verdicts {state.gain_pct:+.1f}% together")
    print(f"tune {tune_id}: {state.status}: {state.stop_reason}; {state.restarts} restarts, "
          f"{state.minutes:.1f} min")
    if state.saved_profile:
        print(f"saved the tuned profile to {state.saved_profile}")


def _output(state: TuneState, tune_id: int | None, as_json: bool, db: str) -> None:
    if as_json:
        data: dict[str, Any] = {**state_json(state, tune_id), "db": db}
        print(json.dumps(finite_or_null(data), allow_nan=False))
    else:
        _print_ladder(state, tune_id)


async def _handle(args: argparse.Namespace) -> int:
    from console.config import load_config

    user = load_config(args.config)
    if args.report is not None:
        return _report(args)
    if bool(args.demo) == bool(args.host):
        raise UsageError("say where to tune: --demo, or a HOST from the config")
    run_dir: Path | None = None
    try:
        config, directory, run_dir = config_for(args, user, TUNE_DEMO_STARTUP_S)
        return await _tune(args, config, directory)
    finally:
        if run_dir is not None:  # the demo's logs and state lived only for this tune
            shutil.rmtree(run_dir, ignore_errors=True)


def config_for(args: argparse.Namespace, user: LoadedConfig, demo_startup_s: float
               ) -> tuple[PlateauConfig, Path, Path | None]:
    """The config host's own config, or a temporary demo's with the user's settings and saved
    demo profiles: (config, the profiles.d to save to, the demo's run dir to remove after)."""
    if not args.demo:
        try:
            args.host = user.config.host(args.host).name
        except KeyError as exc:
            raise UsageError(str(exc.args[0])) from None
        return user.config, profiles_dir(user), None
    config, run_dir = temp_demo(startup_seconds=demo_startup_s)
    try:
        config, directory, _notes = demo_with_user(config, user)
    except BaseException:
        shutil.rmtree(run_dir, ignore_errors=True)
        raise
    args.host = DEMO_HOST
    return config, directory, run_dir


async def _tune(args: argparse.Namespace, config: PlateauConfig, directory: Path) -> int:
    host = config.host(args.host)
    store = RunStore(args.db)
    try:
        if args.resume is not None:
            state, found = _resumed(store, args, host.name, config)
            resumed: int | None = found
            _say(f"resuming tune {found} of {state.request.profile} on {host.name}: "
                 f"{len(state.ladder)} step(s) done, {state.restarts} restarts used")
        else:
            request = _request(args, config, host.name)
            state, resumed = new_state(request, config.profiles[request.profile]), None
            slo = request.spec.slo
            _say(f"tune {request.profile} on {host.name}: preset {request.preset}, "
                 f"concurrency {request.spec.concurrency}, objective {request.metric}"
                 + (f" under {slo_text(slo)}" if slo is not None else "") + ", "
                 f"{request.repeats} interleaved repeats per side")
        stop = asyncio.Event()
        async with host_lifecycle(host, stop_after=args.demo) as life, _ctrl_c(stop):
            bench = HostBench(life, store)
            state, tune_id = await run_tune(bench, state, store=store, tune_id=resumed,
                                            on_progress=_on_progress, stop=stop)
        state.saved_profile = _save(state, directory, tune_id, demo=args.demo)
        store.save_tune(tune_id, host.name, state.status, state_json(state, tune_id))
        _output(state, tune_id, args.json, str(store.path))
    finally:
        store.close()
    return 0


@contextlib.asynccontextmanager
async def _ctrl_c(stop: asyncio.Event) -> Any:
    """The first Ctrl-C asks the tune to stop at its next safe point; a second one interrupts."""
    loop = asyncio.get_running_loop()

    def first() -> None:
        _say("plateau: stopping at the next safe point (Ctrl-C again to interrupt)")
        stop.set()
        loop.remove_signal_handler(signal.SIGINT)

    try:
        loop.add_signal_handler(signal.SIGINT, first)
    except (NotImplementedError, RuntimeError):  # not the main thread: no handler
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGINT)


def _report(args: argparse.Namespace) -> int:
    store = RunStore(args.db)
    try:
        state = load_state(store, args.report)
        _output(state, args.report, args.json, str(store.path))
    finally:
        store.close()
    return 0
