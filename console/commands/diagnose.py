"""`plateau diagnose [RUN] [--json] [--db PATH]`: why a stored run plateaued, from the evidence
stored with it (the server need not be running).

`plateau diagnose --log FILE [--bench FILE ...] [--json]`: the same from a server log copied off
a host, with SGLang bench_serving `--output-file` JSONL or `plateau sweep --json` output for the
client's side (console/diagnose/log_diagnosis.py)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from console.bench.models import StepResult
from console.bench.objective import Objective, objective_knee
from console.bench.summary import run_summary
from console.commands import argtypes
from console.diagnose.diagnose import diagnose, diagnosis_json, diagnosis_lines
from console.diagnose.models import RunEvidence
from console.diagnose.run_crash import run_crash
from console.errors import UsageError
from console.store.db import RunStore
from console.store.export import finite_or_null
from console.text import sanitize


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "diagnose",
        help="why a stored sweep plateaued: the knee and ranked causes with evidence",
        description="Diagnose a stored run again from its stored evidence (log lines, /metrics, "
        "GPU samples, startup facts, flags, the client's record).",
    )
    p.add_argument("run", nargs="?", type=argtypes.run_id, help="run id (default: the latest run)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--db", help="history database (else $PLATEAU_DB, else the user data dir)")
    p.add_argument("--objective", choices=["throughput", "goodput", "tok-per-joule"],
                   default="throughput",
                   help="what the knee is read off: total tok/s (default), goodput (req/s "
                   "meeting the sweep's SLO) or output tokens per joule")
    p.add_argument("--log", metavar="FILE",
                   help="diagnose an SGLang server log instead of a stored run")
    p.add_argument("--bench", metavar="FILE", action="append", default=[],
                   help="with --log: bench_serving --output-file JSONL or `plateau sweep "
                   "--json` output for the client's side (repeatable)")
    p.set_defaults(handler=_handle)


def _handle_log(args: argparse.Namespace) -> int:
    from console.diagnose.client_files import read_client_files
    from console.diagnose.log_diagnosis import (
        diagnose_log,
        log_diagnosis_json,
        log_diagnosis_lines,
        open_log,
    )
    from console.text import sanitize_lines

    if args.run is not None:
        raise UsageError("diagnose: give a run id or --log FILE, not both")
    client = read_client_files(args.bench)
    result = diagnose_log(open_log(args.log), client, path=args.log)
    if args.json:
        print(json.dumps(finite_or_null(log_diagnosis_json(result)), allow_nan=False))
        return 0
    # Log text (file names, server_args values) is the host's: never terminal escapes.
    sys.stdout.write(sanitize_lines("\n".join(log_diagnosis_lines(result)) + "\n"))
    return 0


def _objective_lines(steps: list[StepResult], spec: dict[str, Any], objective: Objective
                     ) -> list[str]:
    """The knee read off a non-default objective, and the SLO's own knee for goodput."""
    if objective == "throughput":
        return []
    knee = objective_knee(steps, objective)
    if knee is None:
        why = "the sweep had no SLO (--slo)" if objective == "goodput" else \
            "no GPU power was sampled during it"
        return [f"{objective}: not measured: {why}"]
    lines = [f"{objective}: {knee.sentence}"]
    figures = run_summary(steps, spec)
    if objective == "goodput" and figures.knee is not None:
        lines.append(f"SLO: {figures.knee.sentence}")
    return lines


def _handle(args: argparse.Namespace) -> int:
    if args.log is not None:
        return _handle_log(args)
    if args.bench:
        raise UsageError("diagnose: --bench needs --log FILE")
    with RunStore(args.db) as store:
        run_id = args.run if args.run is not None else store.latest_run_id()
        if run_id is None:
            raise UsageError(f"no runs yet in {store.path}")
        try:
            run = store.get_run(run_id)
        except (KeyError, OverflowError):
            raise UsageError(f"no run {run_id} in {store.path}") from None
        evidence = store.load_evidence(run_id)
    stored = evidence is not None
    diagnosis = diagnose(run.steps, evidence if evidence is not None
                         else RunEvidence(sources=["client"]))
    objective = _objective_lines(run.steps, run.summary.meta.spec, args.objective)
    crash = run_crash(run.steps)
    if args.json:
        payload = {"run_id": run_id,
                   "crash": None if crash is None else {
                       "step": crash.step.index, "concurrency": crash.step.concurrency,
                       **crash.finding.as_json()},
                   "evidence_stored": stored,
                   "diagnosis": diagnosis_json(diagnosis),
                    "objective": {"name": args.objective, "lines": objective},
                    "ladder": None if diagnosis.ladder is None
                    else diagnosis.ladder.model_dump(mode="json")}
        print(json.dumps(finite_or_null(payload), allow_nan=False))
        return 0
    if crash is not None:  # the first finding: the server died during the run
        print(f"crash: {sanitize(crash.sentence())}")
    print(f"run {run_id} ({run.label}): {diagnosis.knee.sentence}")
    for line in objective:
        print(line)
    if not stored:
        print("(no evidence stored with this run: only the client's numbers were checked)")
    for line in diagnosis_lines(diagnosis, top=5):
        print(line)
    return 0
