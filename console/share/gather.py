"""What a report shows, read from the store once: each run with its evidence and diagnosis,
and the A/B verdicts between them.

    report = gather(store, [12, 13])
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from console.bench.verdict import Verdict, differing_settings, judge
from console.diagnose.diagnose import diagnose
from console.diagnose.models import Diagnosis, RunEvidence
from console.store.models import RunRecord


@dataclass(frozen=True)
class RunView:
    run: RunRecord
    evidence: RunEvidence | None  # None: nothing but the client's numbers was stored
    diagnosis: Diagnosis

    @property
    def title(self) -> str:
        return f"run {self.run.id}: {self.run.label}"


@dataclass(frozen=True)
class PairView:
    """B judged against A, as `plateau compare` judges it."""

    a: RunView
    b: RunView
    verdict: Verdict
    flags: list[tuple[str, str, str]]  # flags and env variables (verdict.differing_settings)
    pair_id: int | None  # the stored A/B pair, or None when two runs are simply compared


@dataclass(frozen=True)
class Report:
    runs: list[RunView]
    pairs: list[PairView] = field(default_factory=list)
    generated_at: float = 0.0


def run_view(store: Any, run_id: int) -> RunView:
    """Raises KeyError when the store has no such run."""
    run = store.get_run(run_id)
    evidence = store.load_evidence(run_id)
    diagnosis = diagnose(run.steps, evidence if evidence is not None
                         else RunEvidence(sources=["client"]))
    return RunView(run=run, evidence=evidence, diagnosis=diagnosis)


def _run_ids(store: Any, run_ids: Sequence[int]) -> list[int]:
    """The runs asked for, in order, plus the A/B partner of a run given alone."""
    ids = list(dict.fromkeys(run_ids))
    if len(ids) == 1:
        pair = store.pair_of(ids[0])
        if pair is not None:
            ids = [pair[1], pair[2]]
    return ids


def _pair(store: Any, a: RunView, b: RunView) -> PairView:
    stored = store.pair_of(a.run.id)
    pair_id, interleaved = None, None
    if stored is not None and {stored[1], stored[2]} == {a.run.id, b.run.id}:
        pair_id = stored[0]
        if "interleaved" in stored[3]:
            interleaved = bool(stored[3]["interleaved"])
        if stored[1] == b.run.id:  # keep the pair's own A and B
            a, b = b, a
    verdict = judge(a.run.steps, b.run.steps, label_a=f"{a.run.id} {a.run.label}",
                    label_b=f"{b.run.id} {b.run.label}", interleaved=interleaved)
    flags = differing_settings(a.run.summary.meta.flags, b.run.summary.meta.flags,
                               a.evidence.env if a.evidence is not None else None,
                               b.evidence.env if b.evidence is not None else None)
    return PairView(a=a, b=b, verdict=verdict, flags=flags, pair_id=pair_id)


def gather(store: Any, run_ids: Sequence[int], *, now: float | None = None) -> Report:
    """Two runs are judged as an A/B (the first is A unless they are a stored pair); more
    than two are shown side by side, each stored pair among them judged."""
    views = [run_view(store, run_id) for run_id in _run_ids(store, run_ids)]
    pairs: list[PairView] = []
    if len(views) == 2:
        pairs.append(_pair(store, views[0], views[1]))
    else:
        by_id = {v.run.id: v for v in views}
        seen: set[int] = set()
        for view in views:
            stored = store.pair_of(view.run.id)
            if stored is None or stored[0] in seen:
                continue
            if stored[1] in by_id and stored[2] in by_id:
                seen.add(stored[0])
                pairs.append(_pair(store, by_id[stored[1]], by_id[stored[2]]))
    return Report(runs=views, pairs=pairs, generated_at=time.time() if now is None else now)
