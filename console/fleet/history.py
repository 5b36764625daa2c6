"""What the run history (SQLite) says about each host: its newest measured sweep with the
diagnosis' cause ids, and its newest A/B pair judged again from the stored steps (as
`plateau compare` and the report do, console/share/gather.py).

Blocking (SQLite): the exporter reads it in a worker thread and serves the last answer, so a
locked or slow database never holds a scrape.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from console.bench.verdict import judge
from console.diagnose.diagnose import diagnose_stored
from console.fleet.summary import LastRun
from console.store.db import RunStore
from console.store.models import RunSummary

RUNS_LOOKED_AT = 200  # the newest runs of the whole history searched for each host's


@dataclass(frozen=True)
class ABLast:
    """A host's newest A/B pair, B against A."""

    pair_id: int
    run_a: int
    run_b: int
    name_a: str
    name_b: str
    word: str
    """The knee verdict: real, within noise or noise unknown (console.bench.verdict)."""
    metric: str
    knee_delta_pct: float | None
    knee_half_width_pct: float | None


@dataclass(frozen=True)
class HostHistory:
    last_run: LastRun | None = None
    ab: ABLast | None = None


@dataclass
class HistoryReader:
    """Reads the history for some hosts; diagnoses and verdicts are cached (a finished run
    does not change), so a re-read costs a few queries."""

    path: Path
    _causes: dict[tuple[int, int], tuple[str, ...]] = field(default_factory=dict)
    """By (run, steps stored): a run still being swept is diagnosed again as it grows."""
    _pairs: dict[int, ABLast] = field(default_factory=dict)

    def read(self, hosts: Iterable[str]) -> dict[str, HostHistory]:
        if not self.path.exists():
            return {}
        with RunStore(self.path) as store:
            runs = store.list_runs(RUNS_LOOKED_AT)
            return {host: self._host(store, [r for r in runs if r.meta.host == host])
                    for host in hosts}

    def _host(self, store: RunStore, runs: list[RunSummary]) -> HostHistory:
        measured = next((r for r in runs if r.steps_ok > 0), None)
        last_run = None
        if measured is not None:
            record = store.get_run(measured.id)
            key = (measured.id, len(record.steps))
            causes = self._causes.get(key)
            if causes is None:
                diagnosis = diagnose_stored(store, measured.id, record.steps)
                causes = self._causes[key] = tuple(c.id for c in diagnosis.causes)
            last_run = LastRun(str(measured.id), record.steps, causes)
        return HostHistory(last_run=last_run, ab=self._newest_pair(store, runs))

    def _newest_pair(self, store: RunStore, runs: list[RunSummary]) -> ABLast | None:
        for run in runs:
            pair = store.pair_of(run.id)
            if pair is None:
                continue
            pair_id, run_a, run_b, stored = pair
            if pair_id not in self._pairs:
                self._pairs[pair_id] = _judged(store, pair_id, run_a, run_b, stored)
            return self._pairs[pair_id]
        return None


def _judged(store: RunStore, pair_id: int, run_a: int, run_b: int,
            stored: dict[str, object]) -> ABLast:
    a, b = store.get_run(run_a), store.get_run(run_b)
    interleaved = bool(stored["interleaved"]) if "interleaved" in stored else None
    verdict = judge(a.steps, b.steps, label_a=a.label, label_b=b.label, interleaved=interleaved)
    return ABLast(
        pair_id=pair_id, run_a=run_a, run_b=run_b,
        name_a=str(stored.get("name_a") or a.label), name_b=str(stored.get("name_b") or b.label),
        word=verdict.knee_word, metric=verdict.metric, knee_delta_pct=verdict.knee_delta_pct,
        knee_half_width_pct=verdict.knee_half_width_pct,
    )
