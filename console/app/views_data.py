"""Rows for the table screens, computed off the UI thread (config, history, compare)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from console.bench.compare import Comparison, compare_runs
from console.bench.verdict import Verdict, differing_flags, judge
from console.config import LoadedConfig, flatten_config, redacted
from console.session.state import HostState
from console.store.db import RunStore
from console.store.models import RunRecord, RunSummary

HISTORY_COLUMNS = ("", "run", "started", "status", "profile / label", "steps",
                   "best total tok/s")


def config_rows(loaded: LoadedConfig) -> list[tuple[str, str, str]]:
    data = redacted(loaded.config.model_dump(mode="json"))
    rows = flatten_config(data)
    return [(key, json.dumps(value), loaded.source_of(path)) for key, path, value in rows]


def measured(run: RunSummary, host: str) -> bool:
    """Whether `run` measured `host`: a run belongs to the host it was stored under. A run
    stored with no host (`plateau sweep --url`) measured a URL, not any configured host, and
    shows under that URL (`plateau history`), never as a run of `host`."""
    return bool(run.meta.host) and run.meta.host == host


def _open_store(path: Path | None) -> RunStore | None:
    if path is None or not path.exists():
        return None
    return RunStore(path)


def history_rows(
    store_path: Path | None, host: str, state: HostState | None, marked: Sequence[int] = ()
) -> tuple[list[tuple[str, ...]], str]:
    """Rows: mark, run, started, status, profile / label, steps, best total tok/s. A run that
    is not complete (cancelled, failed, interrupted, running) says so in its status and is
    never picked for a default comparison."""
    store = _open_store(store_path)
    rows: list[tuple[str, ...]] = []
    if store is not None:
        try:
            for run in store.list_runs(200):
                if not measured(run, host):
                    continue
                started = datetime.fromtimestamp(run.started_at).strftime("%Y-%m-%d %H:%M")
                best = "-" if run.best_total_tok_s is None else f"{run.best_total_tok_s:,.0f}"
                steps = str(run.steps_ok)
                if run.steps_failed:
                    steps += f" (+{run.steps_failed} failed)"
                status = run.status if complete(run) else f"{run.status} \u2717"
                what = " / ".join(x for x in (run.meta.profile, run.meta.label) if x) or "-"
                mark = "\u25cf" if run.id in marked else ""
                rows.append((mark, str(run.id), started, status, what, steps, best))
        finally:
            store.close()
    if rows:
        keys = "enter: open a run · m: mark two, then c compares them"
        return rows, f"{len(rows)} run(s) of {host} in {store_path} — {keys}"
    live = state.sweep if state is not None else None
    if live is not None and live.points:
        return [], f"no stored runs yet; the current sweep has {len(live.points)} step(s)"
    return [], f"no runs of {host} yet — press s on the dashboard to run a sweep"


def open_run(
    store_path: Path | None, run_id: int
) -> tuple[RunRecord, list[str], str] | None:
    """A stored run, its diagnosis lines (from the evidence stored with it) and its A/B pair's
    verdict, for the run screen."""
    from console.diagnose.diagnose import diagnose_stored, diagnosis_lines

    store = _open_store(store_path)
    if store is None:
        return None
    try:
        run = store.get_run(run_id)
        diagnosis = diagnosis_lines(diagnose_stored(store, run_id, run.steps))
        pair = store.pair_of(run_id)
    except KeyError:
        return None
    finally:
        store.close()
    said = ""
    if pair is not None:
        side = "A" if pair[1] == run_id else "B"
        said = (f"A/B pair {pair[0]}: this run is {side} (runs {pair[1]} vs {pair[2]}) — "
                f"{pair[3].get('sentence', '')}")
    return run, diagnosis, said


def step_times(
    store_path: Path | None, host: str
) -> list[tuple[dict[str, object], int, float, float]]:
    """Stored step durations of `host` (for the A/B dialog's time estimate)."""
    store = _open_store(store_path)
    if store is None:
        return []
    try:
        return store.step_times(host)
    finally:
        store.close()


def complete(run: RunSummary) -> bool:
    """A run that may be compared by default: finished, with at least one measured step
    (cancelled, failed, interrupted and still-running runs are marked, never picked)."""
    return bool(run.status == "finished" and run.steps_ok > 0)


def latest_two_runs(
    store_path: Path | None, host: str, ids: tuple[int, int] | None = None
) -> tuple[RunRecord, RunRecord] | None:
    """(A, B) RunRecords, older first: the runs `ids` when given (marked in history), else
    the two newest complete runs of `host`."""
    store = _open_store(store_path)
    if store is None:
        return None
    try:
        if ids is not None:
            first, second = sorted(ids)
            return store.get_run(first), store.get_run(second)
        runs = [
            r for r in store.list_runs(200)
            if measured(r, host) and complete(r)
        ]
        if len(runs) < 2:
            return None
        return store.get_run(runs[1].id), store.get_run(runs[0].id)
    except KeyError:
        return None
    finally:
        store.close()


def judged(
    a: RunRecord, b: RunRecord
) -> tuple[Comparison, Verdict, list[tuple[str, str, str]], str]:
    """(comparison, verdict, differing flags, note) for two RunRecords, B against A."""
    comparison = compare_runs(a.steps, b.steps, label_a=a.label, label_b=b.label)
    verdict = judge(a.steps, b.steps, label_a=a.label, label_b=b.label)
    flags = differing_flags(a.summary.meta.flags, b.summary.meta.flags)
    return comparison, verdict, flags, f"A = run {a.id} ({a.label}), B = run {b.id} ({b.label})"


def flags_line(flags: list[tuple[str, str, str]]) -> str:
    if not flags:
        return "flags: the same"
    return "flags: " + "; ".join(f"{name} {va} → {vb}" for name, va, vb in flags)


def latest_diagnosis(store_path: Path | None, host: str) -> tuple[Any, Any, str]:
    """(Diagnosis, RunRecord, note) for the newest run of `host` with a measured step, from
    the evidence stored with it; (None, None, why) when there is none."""
    from console.diagnose.diagnose import diagnose_stored

    store = _open_store(store_path)
    if store is None:
        return None, None, f"no runs of {host} yet: press s to sweep, then W"
    try:
        for summary in store.list_runs(200):
            if not measured(summary, host) or summary.steps_ok == 0:
                continue
            run = store.get_run(summary.id)
            diagnosis = diagnose_stored(store, run.id, run.steps)
            note = (f"run {run.id} ({run.label}, {run.summary.status}); evidence from: "
                    f"{', '.join(diagnosis.sources) or 'the client only'}")
            return diagnosis, run, note
    finally:
        store.close()
    return None, None, f"no measured runs of {host} yet: press s to sweep, then W"


def crash_sentence(run: Any) -> str:
    """The crash the run's server died of (its failed step's log tail), or ""."""
    from console.diagnose.run_crash import run_crash

    crash = run_crash(run.steps) if run is not None else None
    return crash.sentence() if crash is not None else ""


def pareto_history(store_path: Path | None, host: str, limit: int = 50) -> list[Any]:
    """Pareto points (console/bench/pareto.py) of the host's newest `limit` complete runs,
    each per GPU by its own /server_info: what the chart's frontier is drawn across."""
    from console.bench.pareto import pareto_points, run_gpus

    store = _open_store(store_path)
    if store is None:
        return []
    points: list[Any] = []
    try:
        runs = [r for r in store.list_runs(200) if measured(r, host) and complete(r)]
        for summary in runs[:limit]:
            run = store.get_run(summary.id)
            points += pareto_points(run.steps, gpus=run_gpus(run.steps, summary.meta.server_info),
                                    run_id=run.id, label=run.label)
    except KeyError:
        pass
    finally:
        store.close()
    return points


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"



def write_report(store_path: Path | None, run_ids: Sequence[int]) -> str:
    """Write `plateau report RUN... --html` for these runs beside the history database
    (reports/plateau-run-<ids>.html); the sentence to show: where it went, or why not."""
    from console.share.gather import gather
    from console.share.report_html import report_html

    store = _open_store(store_path)
    if store is None or store_path is None or not run_ids:
        return "no stored run to report"
    try:
        page = report_html(gather(store, run_ids))
    except KeyError:
        return f"run {run_ids[0]} is no longer stored"
    finally:
        store.close()
    target = store_path.parent / "reports" / f"plateau-run-{'-'.join(map(str, run_ids))}.html"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(page, encoding="utf-8")
    except OSError as exc:
        return f"cannot write {target}: {exc.strerror or exc}"
    return f"report written: {target} ({len(page.encode()):,} bytes)"
