"""`plateau ab (--demo | HOST) --a PROFILE --b PROFILE [--repeats N] [--interleave] [--json]`:
the console's A/B, headless. Restarts the host's server into A and B (repeats of each,
A B A B ... with --interleave), sweeps, stores each side as one run and the pair with its
verdict, and prints the verdict (the same `plateau compare RUN_A RUN_B` prints later).

`--a P@0.5.18 --b P@0.5.23`: an upgrade A/B, profile P's flags on two of its installs
(`installs` in the profile), translated per install (console/jobs/upgrade.py).

`plateau ab (--demo | HOST) --aa --a PROFILE [--repeats N]`: an A/A on fresh boots (A A A A
..., a restart each): how much two boots of the profile differ per level, stored per
host+profile+version as the floor every later verdict of that profile reads
(console.bench.bootfloor). `--warmup-load` warms each fresh boot up before it is measured."""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sys
from collections.abc import AsyncIterator

from console.bench.abplan import estimate, model_steps, restart_guess, step_durations
from console.bench.bootfloor import BootFloor
from console.bench.fit_table import terminal_width
from console.bench.report import verdict_report
from console.bench.slo import slo_knee
from console.commands import argtypes
from console.commands.sweep import (
    add_workload_args,
    check_trace,
    int_list,
    print_progress,
    workload_updates,
)
from console.config_models import HostConfig, PlateauConfig, SweepPreset, WarmupLoad
from console.demo import DEMO_HOST, temp_demo
from console.demo_user import demo_with_user
from console.errors import UsageError
from console.host.factory import transport_for
from console.jobs.ab import ABProgress, ABRequest, ABResult, profile_sweep, run_ab
from console.jobs.server import lifecycle_for
from console.jobs.upgrade import UnknownInstall, profile_at
from console.server.guard import owner_guard
from console.server.lifecycle import ServerLifecycle
from console.store.db import RunStore
from console.store.export import finite_or_null

DEMO_A, DEMO_B = "triton-moe", "cutlass-moe"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "ab",
        help="A/B two launch profiles (repeats, verdict) and store both runs",
        description="Restart into profile A and B (each --repeats times), sweep each, and say "
        "whether B is really better or worse than A per concurrency (95% confidence). --a and "
        "--b may name the same profile: an A/A check of the host's run-to-run noise.",
    )
    target = p.add_argument_group("target (one of)")
    target.add_argument("host", nargs="?", help="config host whose server to restart")
    target.add_argument("--demo", action="store_true", help="the demo simulator on this machine")
    p.add_argument("--a", dest="profile_a", help=f"profile A (demo default: {DEMO_A}); P@V runs "
                   "profile P on its install V (an upgrade A/B: --a P@0.5.18 --b P@0.5.23)")
    p.add_argument("--b", dest="profile_b", help=f"profile B (demo default: {DEMO_B})")
    p.add_argument("--preset", help="sweep preset [sweeps.NAME] (demo default: quick)")
    p.add_argument("--concurrency", type=int_list, help="override the preset's levels, e.g. 4,16")
    p.add_argument("--repeats", type=int, default=3, help="sweeps per side (default 3)")
    p.add_argument("--interleave", action="store_true",
                   help="run A B A B ... (a restart per pass) to cancel drift")
    p.add_argument("--aa", action="store_true",
                   help="A/A on fresh boots of --a (interleaved, a restart per pass): measure "
                   "and store how much boots differ, the floor later verdicts of this profile "
                   "and version on this host read")
    p.add_argument("--warmup-load", action="store_true",
                   help="before each pass's first step, load the fresh server until its "
                   "latency converged (the preset's [sweeps.NAME.warmup_load], else defaults)")
    p.add_argument("--slo", type=argtypes.slo, metavar="KEY=MS,...",
                   help="latency SLO for both sides (as `sweep --slo`): goodput per step and "
                   "where each side stops meeting it")
    add_workload_args(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--db", help="history database (else $PLATEAU_DB, else the user data dir)")
    p.set_defaults(handler=_handle)


def _request(args: argparse.Namespace, config: PlateauConfig) -> ABRequest:
    a = args.profile_a or (DEMO_A if args.demo else None)
    b = a if args.aa else args.profile_b or (DEMO_B if args.demo else None)
    if args.aa and args.profile_b not in (None, a):
        raise UsageError("--aa compares --a with itself: leave --b out")
    if not a or not b:
        raise UsageError("say which profiles to compare: --a PROFILE --b PROFILE")
    for name in (a, b):
        try:
            profile_at(config.profiles, name)
        except UnknownInstall as exc:
            raise UsageError(str(exc)) from None
    if not 1 <= args.repeats <= 20:
        raise UsageError("--repeats must be from 1 to 20")
    preset = args.preset or ("quick" if args.demo else "default")
    if args.preset and args.preset not in config.sweeps:
        known = ", ".join(config.sweeps) or "none"
        raise UsageError(f"unknown sweep preset {args.preset!r} (known: {known})")
    levels = tuple(args.concurrency) if args.concurrency else None
    if args.aa and args.repeats < 2:
        raise UsageError("--aa needs --repeats 2 or more (2 x repeats boots in all)")
    return ABRequest(a, b, preset, args.repeats, args.interleave or args.aa, levels)


def _with_workload(spec: SweepPreset, args: argparse.Namespace) -> SweepPreset:
    updates = workload_updates(args)
    if updates.get("request_rate") or spec.request_rate:
        # The verdict judges per concurrency (console.bench.verdict); rate steps share one.
        raise UsageError("an A/B compares concurrency levels: --request-rate is for sweeps")
    if not updates:
        return spec
    try:
        return SweepPreset.model_validate({**spec.model_dump(), **updates})
    except ValueError as exc:
        raise UsageError(f"invalid workload setting: {exc}") from None


@contextlib.asynccontextmanager
async def host_lifecycle(host: HostConfig, stop_after: bool) -> AsyncIterator[ServerLifecycle]:
    transport = transport_for(host)
    await transport.connect()
    try:
        async with contextlib.AsyncExitStack() as stack:
            if stop_after:  # started first: if we are killed, the server and run dir go with us
                await stack.enter_async_context(
                    owner_guard(transport, host, stop_server=True, remove_run_dir=True))
            life = lifecycle_for(transport, host)
            try:
                yield life
            finally:
                if stop_after:  # the demo's server lives only as long as the command
                    with contextlib.suppress(Exception):
                        await life.stop()
    finally:
        await transport.close()


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _on_progress(p: ABProgress) -> None:
    if p.message and p.stage != "done":
        _say(f"[{p.stage}] {p.message}")


def aa_sentence(knee_word: str, sentence: str) -> str:
    """What an A/A (one profile on both sides) says: the host's run-to-run noise."""
    if knee_word == "within noise":
        return (f"A/A noise check: the same profile twice is within noise ({sentence}), as it "
                "should be; an A/B here can trust differences beyond that")
    if knee_word == "real":
        return (f"A/A noise check: the same profile twice differs beyond the noise estimate "
                f"({sentence}): this host drifts between runs; use more --repeats and "
                "--interleave before trusting an A/B here")
    return (f"A/A noise check: noise unknown ({sentence}); it needs --repeats 2 or more to say "
            "whether the host is within noise")


def floor_sentence(floor: BootFloor, *, measured: bool) -> str:
    """The boot-to-boot floor, as an A/A measured it or as the verdict used it."""
    what = f"{floor.profile} {floor.version or '(version unknown)'} on {floor.host}"
    if measured:
        return (f"boot floor of {what}: {floor.summary()}; stored: every verdict of this "
                "profile and version on this host reads it")
    return f"boot floor used ({what}, A/A runs {floor.run_a} and {floor.run_b}): " \
        f"{floor.summary()}"


def upgrade_lines(result: ABResult) -> list[str]:
    """What each side ran when that differs from the profile as written: its SGLang version
    (when A's and B's differ) and the flags translated to its install's names."""
    sides = result.sides
    lines = []
    if len({facts.version for facts in sides.values()}) > 1:
        lines.append("upgrade: " + ", ".join(f"{side} ran SGLang {facts.version or '?'}"
                                            for side, facts in sorted(sides.items())))
    for side, facts in sorted(sides.items()):
        lines += [f"  {side}: {note}" for note in facts.renamed]
    return lines


def _json(result: ABResult, request: ABRequest, db: str) -> str:
    return json.dumps(finite_or_null({
        "verdict": result.verdict.model_dump(mode="json"),
        "flags_differing": [{"flag": f, "a": va, "b": vb} for f, va, vb in result.flags],
        "a": request.a, "b": request.b, "preset": request.preset,
        "repeats": request.repeats, "interleave": request.interleave,
        "run_a": result.run_a, "run_b": result.run_b, "pair_id": result.pair_id, "db": db,
        "aa_check": request.a == request.b,
        "boot_floor": result.floor.model_dump(mode="json") if result.floor else None,
        "sides": {side: {"version": f.version, "flags": f.flags, "renamed": list(f.renamed)}
                  for side, f in result.sides.items()},
    }), allow_nan=False)


async def _handle(args: argparse.Namespace) -> int:
    from console.config import load_config

    if bool(args.demo) == bool(args.host):
        raise UsageError("say where to A/B: --demo, or a HOST from the config")
    check_trace(args)
    user = load_config(args.config)
    _run_dir = None
    if args.demo:
        config, _run_dir = temp_demo(startup_seconds=0, real_restarts=True)
        try:
            config, _profiles, _notes = demo_with_user(config, user)  # the user's presets too
            request = _request(args, config)
            spec = _with_workload(request.spec(config.sweep(request.preset)), args)
        except BaseException:  # a usage error leaves no temp run dir behind
            shutil.rmtree(_run_dir, ignore_errors=True)
            raise
        host_name = DEMO_HOST
    else:
        config = user.config
        try:
            host_name = config.host(args.host).name
        except KeyError as exc:
            raise UsageError(str(exc.args[0])) from None
        request = _request(args, config)
        spec = _with_workload(request.spec(config.sweep(request.preset)), args)
    if args.slo is not None:
        spec = spec.model_copy(update={"slo": args.slo})
    if args.warmup_load and spec.warmup_load is None:
        spec = spec.model_copy(update={"warmup_load": WarmupLoad()})
    host = config.host(host_name)
    profile_a, profile_b = (profile_at(config.profiles, request.a),
                            profile_at(config.profiles, request.b))
    store: RunStore | None = None
    try:
        store = RunStore(args.db)
        guess = estimate(
            spec, request.repeats, request.interleave,
            restart_s=restart_guess(profile_a),
            measured_step_s=step_durations(spec, store.step_times(host.name)),
            model_step_s=model_steps(spec, profile_a, profile_b),
        )
        order = "interleaved A B A B" if request.interleave else "A then B"
        _say(f"A/B {request.a} vs {request.b} on {host.name}: preset {request.preset}, "
             f"concurrency {spec.concurrency}, {request.repeats} repeat(s), {order}")
        _say(f"estimate {guess.text()}")
        progress = None if args.json else print_progress
        async with host_lifecycle(host, stop_after=args.demo) as life:
            sweep = profile_sweep(life, spec, store=store, on_sweep_event=progress,
                                  label_for=lambda name: f"A/B {name} ({request.preset})")
            result = await run_ab(
                life, (request.a, profile_a), (request.b, profile_b), sweep,
                on_progress=_on_progress, repeats=request.repeats,
                interleave=request.interleave, store=store, preset=request.preset,
                aa=args.aa,
            )
    finally:
        if store is not None:
            store.close()
        if _run_dir is not None:  # the demo's logs and state lived only for this A/B
            shutil.rmtree(_run_dir, ignore_errors=True)
    if args.json:
        print(_json(result, request, str(store.path)))
    else:
        print(f"A = {request.a} (run {result.run_a})    B = {request.b} (run {result.run_b})")
        if request.a == request.b:
            print(aa_sentence(result.verdict.knee_word, result.verdict.sentence))
        if result.floor is not None:
            print(floor_sentence(result.floor, measured=args.aa))
        for line in upgrade_lines(result):
            print(line)
        print(verdict_report(result.verdict, list(result.flags), terminal_width()))
        if spec.slo is not None:
            for side, steps in (("A", result.steps_a), ("B", result.steps_b)):
                print(f"{side}: {slo_knee(steps, spec.slo).sentence}")
        print(f"\nstored as runs {result.run_a} and {result.run_b} (A/B pair "
              f"{result.pair_id}) in {store.path}; "
              f"`plateau compare {result.run_a} {result.run_b}` says it again")
    failed = sum(1 for s in result.steps_a + result.steps_b if s.status != "ok")
    if failed:
        _say(f"plateau: {failed} step(s) failed")
    return 1 if failed else 0

