"""Rows for the table screens, computed off the UI thread (config, history, compare)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from console.commands.config_cmd import _flatten
from console.config import LoadedConfig, redacted
from console.session.state import HostState
from console.store.db import RunStore
from console.store.models import RunRecord, StepResult

HISTORY_COLUMNS = ("run", "started", "status", "profile", "steps", "best total tok/s")
COMPARE_COLUMNS = ("concurrency", "A total tok/s", "B total tok/s", "Δ tok/s", "Δ %")


def config_rows(loaded: LoadedConfig) -> list[tuple[str, str, str]]:
    data = redacted(loaded.config.model_dump(mode="json"))
    return [
        (key, json.dumps(value), loaded.source_of(path)) for key, path, value in _flatten(data)
    ]


def _open_store(path: Path | None) -> RunStore | None:
    if path is None or not path.exists():
        return None
    return RunStore(path)


def history_rows(
    store_path: Path | None, host: str, state: HostState | None
) -> tuple[list[tuple[str, ...]], str]:
    store = _open_store(store_path)
    rows: list[tuple[str, ...]] = []
    if store is not None:
        try:
            for run in store.list_runs(200):
                if run.meta.host and run.meta.host != host:
                    continue
                started = datetime.fromtimestamp(run.started_at).strftime("%Y-%m-%d %H:%M")
                best = "-" if run.best_total_tok_s is None else f"{run.best_total_tok_s:,.0f}"
                steps = str(run.steps_ok)
                if run.steps_failed:
                    steps += f" (+{run.steps_failed} failed)"
                rows.append(
                    (str(run.id), started, run.status, run.meta.profile or "-", steps, best)
                )
        finally:
            store.close()
    if rows:
        return rows, f"{len(rows)} run(s) of {host} in {store_path}"
    live = state.sweep if state is not None else None
    if live is not None and live.points:
        return [], f"no stored runs yet; the current sweep has {len(live.points)} step(s)"
    return [], f"no runs of {host} yet — press s on the dashboard to run a sweep"


def compare_rows(store_path: Path | None, host: str) -> tuple[list[tuple[str, ...]], str]:
    store = _open_store(store_path)
    if store is None:
        return [], "no run history yet: run two sweeps (e.g. one per profile) to compare"
    try:
        runs = [r for r in store.list_runs(200) if not r.meta.host or r.meta.host == host]
        if len(runs) < 2:
            return [], "need two runs of this host to compare"
        b, a = store.get_run(runs[0].id), store.get_run(runs[1].id)
    finally:
        store.close()
    totals_a = _totals(a.steps)
    totals_b = _totals(b.steps)
    rows = []
    for conc in sorted(set(totals_a) | set(totals_b)):
        va, vb = totals_a.get(conc), totals_b.get(conc)
        delta = "-" if va is None or vb is None else f"{vb - va:+,.0f}"
        pct = "-" if not va or vb is None else f"{(vb - va) / va * 100:+.1f}%"
        rows.append((str(conc), _fmt(va), _fmt(vb), delta, pct))
    return rows, f"A = run {a.id} ({a.label}), B = run {b.id} ({b.label})"


def latest_two_runs(store_path: Path | None, host: str) -> tuple[RunRecord, RunRecord] | None:
    """(A, B) RunRecords: the two latest runs of `host`, older first."""
    store = _open_store(store_path)
    if store is None:
        return None
    try:
        runs = [r for r in store.list_runs(200) if not r.meta.host or r.meta.host == host]
        if len(runs) < 2:
            return None
        return store.get_run(runs[1].id), store.get_run(runs[0].id)
    finally:
        store.close()


def _totals(steps: list[StepResult]) -> dict[int, float]:
    out: dict[int, float] = {}
    for step in steps:
        if step.metrics is not None and step.status == "ok":
            out[step.concurrency] = max(out.get(step.concurrency, 0.0), step.metrics.total_tok_s)
    return out


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"

