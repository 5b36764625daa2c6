"""`plateau history [--json] [--show RUN] [--export RUN --format csv|json|md] [--delete RUN]`."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from datetime import datetime

from console.bench.fit_table import terminal_width
from console.bench.report import number_cell, steps_table, table
from console.commands import argtypes
from console.errors import UsageError
from console.store.db import RunStore
from console.store.export import EXPORTERS, finite_or_null
from console.store.models import RunSummary


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("history", help="list stored sweep runs (show, export, delete)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--limit", type=argtypes.positive_int, default=50)
    p.add_argument("--show", type=argtypes.run_id, metavar="RUN", help="print one run's steps")
    p.add_argument("--export", type=argtypes.run_id, metavar="RUN", help="export one run")
    p.add_argument("--format", choices=sorted(EXPORTERS), default="md")
    p.add_argument("--output", "-o", help="write the export here (default: stdout)")
    p.add_argument("--delete", type=argtypes.run_id, metavar="RUN", help="delete one run")
    p.add_argument("--db", help="history database (else $PLATEAU_DB, else the user data dir)")
    p.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    with RunStore(args.db) as store:
        if args.delete is not None:
            if not store.delete_run(args.delete):
                raise UsageError(f"no run {args.delete} in {store.path}")
            print(f"deleted run {args.delete}")
            return 0
        if args.export is not None or args.show is not None:
            run_id = args.export if args.export is not None else args.show
            try:
                run = store.get_run(run_id)
            except KeyError:
                raise UsageError(f"no run {run_id} in {store.path}") from None
            if args.show is not None:
                if args.json:
                    print(json.dumps(finite_or_null(run.model_dump(mode="json"))))
                else:
                    print(steps_table(run.steps, width=terminal_width()))
                return 0
            text = EXPORTERS[args.format](run)
            if args.output:
                try:
                    with open(args.output, "w", encoding="utf-8") as handle:
                        handle.write(text)
                except OSError as exc:
                    raise UsageError(
                        f"cannot write {args.output}: {exc.strerror or exc}"
                    ) from None
            else:
                sys.stdout.write(text)
            return 0
        runs = store.list_runs(args.limit)
        if args.json:
            print(json.dumps(finite_or_null([r.model_dump(mode="json") for r in runs])))
        elif not runs:
            print(f"no runs yet in {store.path}")
        else:
            print(history_table(runs))
    return 0


def history_table(runs: Sequence[RunSummary]) -> str:
    headers = (
        "run",
        "started",
        "status",
        "steps ok/failed",
        "best total tok/s",
        "best output tok/s",
        "engine",
        "host / profile / label",
    )
    rows = []
    for run in runs:
        meta = run.meta
        started = datetime.fromtimestamp(run.started_at).strftime("%Y-%m-%d %H:%M")
        where = " / ".join(x for x in (meta.host or meta.server_url, meta.profile, meta.label) if x)
        rows.append(
            [
                str(run.id),
                started,
                run.status,
                f"{run.steps_ok}/{run.steps_failed}",
                number_cell(run.best_total_tok_s),
                number_cell(run.best_output_tok_s),
                meta.engine,
                where or "-",
            ]
        )
    return table(headers, rows)
