"""`plateau diagnose RUN` reads evidence stored by versions before a cause had presence and
effect axes (issue 37): a stored step without `offered_known`, run facts without
`max_total_tokens`, read from a real SQLite store, diagnose as a sweep's levels."""

from __future__ import annotations

import json
from pathlib import Path

from console.bench.models import StepMetrics, StepResult
from console.diagnose.diagnose import diagnose
from console.diagnose.models import DecodeRow, RunEvidence, StartupFacts, StepEvidence
from console.store.db import RUN_FACTS_IDX, RunStore
from console.store.models import RunMeta


def _step(index: int, concurrency: int, running: int, queue: int, rate: float) -> StepEvidence:
    rows: list[DecodeRow] = [
        (running, queue, 0.3, True, rate + i) for i in range(6)]
    return StepEvidence(index=index, concurrency=concurrency, started_at=1.7e9 + 60 * index,
                        finished_at=1.7e9 + 60 * index + 50, decode_rows=rows)


def test_evidence_stored_before_the_two_axes_still_diagnoses(tmp_path: Path) -> None:
    steps = [_step(0, 8, 8, 0, 800.0), _step(1, 32, 32, 0, 2400.0),
             _step(2, 64, 32, 32, 2410.0), _step(3, 128, 32, 96, 2420.0)]
    facts = RunEvidence(startup=StartupFacts(max_running_requests=32), sources=["log"])
    with RunStore(tmp_path / "runs.db") as store:
        run_id = store.create_run(RunMeta(host="box"))
        old_facts = json.loads(facts.model_dump_json())
        del old_facts["startup"]["max_total_tokens"]  # a field this change added
        store._save_evidence(run_id, RUN_FACTS_IDX, json.dumps(old_facts))
        for step in steps:
            old = json.loads(step.model_dump_json())
            del old["offered_known"]  # a field this change added
            store._save_evidence(run_id, step.index, json.dumps(old))
        evidence = store.load_evidence(run_id)
    assert evidence is not None
    assert all(s.offered_known for s in evidence.steps)
    results = [StepResult(index=s.index, concurrency=s.concurrency, status="ok",
                          metrics=StepMetrics(concurrency=s.concurrency,
                                              total_tok_s=float(t)))
               for s, t in zip(steps, (900, 2700, 2710, 2720), strict=True)]
    diagnosis = diagnose(results, evidence)
    cap = diagnosis.causes[0]
    assert cap.id == "running-cap"
    assert cap.evidence[0].text.startswith("step c=128")
    assert cap.suggest.at_concurrency == 128 and cap.suggest.flags == {
        "max-running-requests": 128}
    assert cap.effect is not None and cap.effect.kind == "measured"
    assert cap.presence is not None and cap.presence.lines == 12
