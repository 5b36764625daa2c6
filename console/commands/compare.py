"""`plateau compare RUN_A RUN_B`: per-concurrency deltas, absolute and %."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from console.bench.compare import compare_runs
from console.bench.knee import knee_of_steps
from console.bench.report import compare_table
from console.commands import argtypes
from console.errors import UsageError
from console.store.db import RunStore
from console.store.export import _finite


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="compare two stored sweep runs per concurrency")
    p.add_argument("run_a", type=argtypes.run_id, metavar="RUN_A")
    p.add_argument("run_b", type=argtypes.run_id, metavar="RUN_B")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--db", help="history database (else $PLATEAU_DB, else the user data dir)")
    p.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    with RunStore(args.db) as store:
        runs = []
        for run_id in (args.run_a, args.run_b):
            try:
                runs.append(store.get_run(run_id))
            except KeyError:
                raise UsageError(f"no run {run_id} in {store.path}") from None
    a, b = runs
    comparison = compare_runs(
        a.steps, b.steps, label_a=f"{a.id} {a.label}", label_b=f"{b.id} {b.label}"
    )
    if args.json:
        print(json.dumps(_finite(asdict(comparison)), allow_nan=False))
        return 0
    print(f"A = run {comparison.label_a}    B = run {comparison.label_b}")
    print(f"A knee: {knee_of_steps(a.steps).sentence}")
    print(f"B knee: {knee_of_steps(b.steps).sentence}")
    if not comparison.rows:
        print("no concurrency level was measured in both runs")
        return 0
    print()
    print(compare_table(comparison))
    if comparison.only_a or comparison.only_b:
        print(f"\nonly in A: {list(comparison.only_a)}  only in B: {list(comparison.only_b)}")
    has_repeats = any(d.within_noise is not None for r in comparison.rows for d in r.deltas)
    if not has_repeats:
        print("\n(no repeats in either run: run-to-run noise unknown; use --repeats 3)")
    return 0
