"""`plateau compare RUN_A RUN_B`: the A/B verdict for two stored runs (the same one `plateau ab`
printed), per-concurrency deltas, and the flags that differ."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from console.bench.compare import compare_runs
from console.bench.fit_table import terminal_width
from console.bench.knee import knee_of_steps
from console.bench.report import compare_table, verdict_report
from console.bench.verdict import ENV_ROW, differing_settings, judge
from console.commands import argtypes
from console.diagnose.models import RunEvidence
from console.errors import UsageError
from console.store.db import RunStore
from console.store.export import finite_or_null
from console.store.models import RunRecord


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("compare", help="compare two stored sweep runs per concurrency")
    p.add_argument("run_a", type=argtypes.run_id, metavar="RUN_A")
    p.add_argument("run_b", type=argtypes.run_id, metavar="RUN_B")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--db", help="history database (else $PLATEAU_DB, else the user data dir)")
    p.set_defaults(handler=_handle)


def _interleaved(store: RunStore, a: RunRecord, b: RunRecord) -> bool | None:
    """Whether the two runs are one interleaved A/B (as stored with the pair), if known."""
    pair = store.pair_of(a.id)
    if pair is None or {pair[1], pair[2]} != {a.id, b.id}:
        return None
    return bool(pair[3].get("interleaved")) if "interleaved" in pair[3] else None


def _env(evidence: RunEvidence | None) -> dict[str, str] | None:
    """The profile env stored with a run, or None when no evidence was (unknown)."""
    return dict(evidence.env) if evidence is not None else None


def _handle(args: argparse.Namespace) -> int:
    with RunStore(args.db) as store:
        runs = []
        for run_id in (args.run_a, args.run_b):
            try:
                runs.append(store.get_run(run_id))
            except KeyError:
                raise UsageError(f"no run {run_id} in {store.path}") from None
        a, b = runs
        interleaved = _interleaved(store, a, b)
        env_a, env_b = (_env(store.load_evidence(run.id)) for run in runs)
    label_a, label_b = f"{a.id} {a.label}", f"{b.id} {b.label}"
    verdict = judge(a.steps, b.steps, label_a=label_a, label_b=label_b, interleaved=interleaved)
    flags = differing_settings(a.summary.meta.flags, b.summary.meta.flags, env_a, env_b)
    comparison = compare_runs(a.steps, b.steps, label_a=label_a, label_b=label_b)
    if args.json:
        print(json.dumps(finite_or_null({
            "verdict": verdict.model_dump(mode="json"),
            "flags_differing": [{"flag": f, "a": va, "b": vb} for f, va, vb in flags
                                if not f.startswith(ENV_ROW)],
            "env_differing": [{"variable": f.removeprefix(ENV_ROW), "a": va, "b": vb}
                              for f, va, vb in flags if f.startswith(ENV_ROW)],
            "comparison": asdict(comparison),
        }), allow_nan=False))
        return 0
    print(f"A = run {label_a}    B = run {label_b}")
    for name, run in (("A", a), ("B", b)):
        if run.summary.status != "finished":
            status = run.summary.status
            print(f"warning: {name} (run {run.id}) is {status}: its numbers are partial")
    print(f"A knee: {knee_of_steps(a.steps).sentence}")
    print(f"B knee: {knee_of_steps(b.steps).sentence}")
    if not comparison.rows:
        print("no concurrency level was measured in both runs")
        return 0
    print()
    width = terminal_width()
    print(verdict_report(verdict, flags, width))
    print()
    print(compare_table(comparison, width=width))
    if comparison.only_a or comparison.only_b:
        print(f"\nonly in A: {list(comparison.only_a)}  only in B: {list(comparison.only_b)}")
    return 0
