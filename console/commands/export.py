"""`plateau export RUN --format csv|json|openmetrics|benchmark-report [-o FILE]`: a stored
run in a format other tools read (console/share/exports.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from console.commands import argtypes
from console.errors import UsageError
from console.share.exports import FORMATS, export_text, write_benchmark_reports
from console.store.db import RunStore


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "export", help="export a stored run: CSV, JSON, OpenMetrics or llm-d Benchmark Report",
        description="CSV/JSON of the run's steps; OpenMetrics text of its results (for the "
        "node_exporter textfile collector or a Pushgateway); llm-d's Benchmark Report v0.2.1, "
        "one report per step (JSON Lines on stdout; with -o FILE and several steps, "
        "FILE_0, FILE_1, ...).")
    p.add_argument("run", type=argtypes.run_id, metavar="RUN")
    p.add_argument("--format", choices=FORMATS, default="csv")
    p.add_argument("--output", "-o", metavar="FILE", help="write here (default: stdout)")
    p.add_argument("--db", help="history database (else $PLATEAU_DB, else the user data dir)")
    p.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    with RunStore(args.db) as store:
        try:
            run = store.get_run(args.run)
        except (KeyError, OverflowError):
            raise UsageError(f"no run {args.run} in {store.path}") from None
        evidence = store.load_evidence(args.run)
    try:
        if args.output and args.format == "benchmark-report":
            for path in write_benchmark_reports(Path(args.output), run, evidence):
                print(f"wrote {path}")
            return 0
        text = export_text(args.format, run, evidence)
        if args.output:
            Path(args.output).write_text(text, encoding="utf-8")
        else:
            sys.stdout.write(text)
    except OSError as exc:
        raise UsageError(f"cannot write {args.output}: {exc.strerror or exc}") from None
    return 0
