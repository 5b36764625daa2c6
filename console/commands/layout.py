"""`plateau layout (--demo | HOST) [--profile P] [--layouts KIND,...] [--preset NAME |
--concurrency ...] [--repeats N] [--json]`: which parallel layout is best for this box, measured
on it (issue 39): the profile as it is against DP2 x TP(n/2), TPn with attention DP and the
custom all-reduce flipped, interleaved launches on the same workload and levels
(console/jobs/layout.py). Prints per layout its total and per-GPU tok/s per level, TTFT/ITL,
KV tokens per replica, whether it fits and the all-reduce share of its decode step; then one
verdict and its cause."""

from __future__ import annotations

import argparse
import json
import shutil
import sys

from console.commands import argtypes
from console.commands.ab import host_lifecycle
from console.commands.sweep import build_spec, int_list
from console.commands.tune import config_for
from console.config_models import PlateauConfig, SweepPreset
from console.errors import UsageError
from console.jobs.allreduce import probe_summary, run_probe
from console.jobs.layout import LayoutRequest, LayoutResult, layout_json, run_layout
from console.jobs.layout_plan import KNOWN_KINDS
from console.jobs.tune_bench import HostBench
from console.store.db import RunStore
from console.store.export import finite_or_null

DEMO_PROFILE = "cutlass-moe"
# The reference model as the DeepSeek-V3-class MoE it stands for: an architecture whose
# attention takes attention DP in SGLang 0.5.23 (console/sglang/layouts.py).
DEMO_ARCH = "DeepseekV3ForCausalLM"
# Short enough for a demo (each pass is a launch and a sweep), long enough for a steady state:
# two waves at each level of the reference workload's prompt length.
DEMO_SPEC = SweepPreset(concurrency=[16, 64], input_len=256, output_len=32,
                        prompts_per_concurrency=2)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "layout",
        help="duel parallel layouts (TPn, DP2 x TP(n/2), attention DP, custom all-reduce)",
        description="Launch the profile and its other layouts on the same GPUs in interleaved "
        "rounds, sweep each on the same workload, and say which is best with its interval "
        "against the current one, and why. A layout whose weights cannot fit is refused "
        "before it is launched.",
    )
    target = p.add_argument_group("target (one of)")
    target.add_argument("host", nargs="?", help="config host whose server to duel")
    target.add_argument("--demo", action="store_true", help="the demo simulator on this machine")
    p.add_argument("--profile", type=argtypes.plain_text,
                   help=f"the current layout's profile (default: the host's; demo: "
                   f"{DEMO_PROFILE})")
    p.add_argument("--layouts", type=_kinds, default=KNOWN_KINDS, metavar="KIND,...",
                   help="which challengers: dp, attn-dp, custom-ar (default: all)")
    p.add_argument("--preset", type=argtypes.plain_text,
                   help="sweep preset (default: default; demo: 16,64 at 256 in / 32 out)")
    p.add_argument("--concurrency", type=int_list, help="override the preset's levels")
    p.add_argument("--repeats", type=argtypes.int_at_least(2, 10), default=2,
                   help="rounds (one launch of each layout per round; default 2)")
    p.add_argument("--hidden-size", type=argtypes.positive_int, default=7168,
                   help="the model's hidden size, for the all-reduce probe's message sizes "
                   "(hidden x batch x bf16; default 7168, DeepSeek-V3's)")
    p.add_argument("--no-probe", action="store_true",
                   help="skip the all-reduce probe (torch + NCCL on the host): estimate from "
                   "the priors over the step times")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--db", help="history database (else $PLATEAU_DB, else the user data dir)")
    p.set_defaults(handler=_handle)


def _kinds(text: str) -> tuple[str, ...]:
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    unknown = [k for k in kinds if k not in KNOWN_KINDS]
    if unknown or not kinds:
        raise argparse.ArgumentTypeError(
            f"unknown layout {', '.join(unknown) or '(none)'} (known: dp, attn-dp, custom-ar)")
    return ("current", *kinds)


def _say(text: str) -> None:
    print(f"[layout] {text}", file=sys.stderr, flush=True)


def _request(args: argparse.Namespace, config: PlateauConfig) -> LayoutRequest:
    name = args.profile or (DEMO_PROFILE if args.demo else config.host(args.host).profile)
    if not name or name not in config.profiles:
        known = ", ".join(sorted(config.profiles)) or "none"
        raise UsageError(f"unknown profile {name!r} (known: {known}); pass --profile NAME")
    if args.preset and args.preset not in config.sweeps:
        raise UsageError(f"unknown sweep preset {args.preset!r} (known: "
                         f"{', '.join(config.sweeps)})")
    base = (DEMO_SPEC if args.demo and not args.preset
            else config.sweep(args.preset or "default"))
    spec = build_spec(base, args)
    if spec.request_rate:
        raise UsageError("a layout duel compares concurrency levels: --request-rate is for "
                         "sweeps")
    return LayoutRequest(host=args.host, profile=name, spec=spec, repeats=args.repeats,
                         kinds=args.layouts)


async def _handle(args: argparse.Namespace) -> int:
    from console.config import load_config

    if bool(args.demo) == bool(args.host):
        raise UsageError("say where to duel layouts: --demo, or a HOST from the config")
    user = load_config(args.config)
    config, _profiles, run_dir = config_for(args, user, 0)
    try:
        request = _request(args, config)
        profile = config.profiles[request.profile]
        if args.demo:
            profile = profile.model_copy(update={"flags": {**profile.flags,
                                                           "sim-arch": DEMO_ARCH}})
        host = config.host(args.host)
        store = RunStore(args.db)
        try:
            _say(f"{request.profile} on {host.name}: concurrency {request.spec.concurrency}, "
                 f"{request.repeats} interleaved rounds, a launch per layout per round")
            async with host_lifecycle(host, stop_after=args.demo) as life:
                probe = None if args.no_probe else await run_probe(
                    life.transport, host.python or "python3", args.hidden_size,
                    list(request.spec.concurrency))
                for line in probe_summary(probe) if probe is not None else []:
                    _say(line)
                top = args.hidden_size * 2 * max(request.spec.concurrency)
                result = await run_layout(HostBench(life, store), request, profile,
                                          store=store, say=_say, measured_us=None
                                          if probe is None else probe.measured_us(top))
        finally:
            store.close()
    finally:
        if run_dir is not None:
            shutil.rmtree(run_dir, ignore_errors=True)
    said = [] if probe is None else probe_summary(probe)
    if args.json:
        print(json.dumps(finite_or_null({**layout_json(result), "db": str(store.path),
                                  "probe": None if probe is None else probe.model_dump(
                                      mode="json"), "probe_says": said}), allow_nan=False))
    else:
        print("\n".join(layout_lines(result) + said))
    return 0


def _num(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def layout_lines(result: LayoutResult) -> list[str]:
    data = layout_json(result)
    levels = [str(c) for c in data["concurrency"]]
    head = ["layout", "GPUs", "fits", "KV tok/replica", "all-reduce"]
    for level in levels:
        head += [f"tok/s@{level}", f"/GPU@{level}", f"TTFT@{level}", f"ITL@{level}"]
    head.append(f"vs current @{levels[-1]}")
    rows = [head]
    for row in data["layouts"]:
        share = row["allreduce_share"]
        cells = [row["layout"], str(row["gpus"]),
                 {True: "yes", False: "NO", None: "?"}[row["fits"]],
                 _num(row["kv_tokens_per_replica"]) + (
                     f" x{row['replicas']}" if row["replicas"] > 1
                     and row["kv_tokens_per_replica"] is not None else ""),
                 "-" if share is None else f"{share * 100:.0f}%"]
        for level in levels:
            got = row["levels"][level]
            cells += [_num(got["total_tok_s"]), _num(got["per_gpu_tok_s"]),
                      _num(got["ttft_p50_ms"]), _num(got["itl_p50_ms"], 1)]
        verdict = row["verdict"]
        cells.append("(current)" if row["kind"] == "current" else
                     "not run (below)" if row["refused"] else "-" if verdict is None else
                     f"{verdict['delta_pct']:+.1f}%"
                     + (f" ± {verdict['half_width_pct']:.1f}%"
                        if verdict["half_width_pct"] is not None else "")
                     + f" {verdict['word']}")
        rows.append(cells)
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    out = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    out.append("TTFT and ITL are p50 in ms; tok/s is total (in + out); all-reduce: share of the "
               f"decode step at the top level, {data['allreduce_source']}")
    for kind, why in data["skipped"].items():
        out.append(f"not run: {kind}: {why}")
    for row in data["layouts"]:
        if row["refused"]:
            out.append(f"not run: {row['layout']}: {row['refused']}")
    out.append(f"verdict: {data['verdict']}")
    out.append(f"cause: {data['cause']}")
    runs = [str(r["run"]) for r in data["layouts"] if r["run"] is not None]
    out.append(f"stored as runs {', '.join(runs)} (each challenger an A/B pair with the "
               "current one): `plateau history`, `plateau compare`")
    return out
