"""The decode CUDA-graph ladder of a stored run (or a log split into steps): its Decode lines
as stored (batch, graph state, gen throughput) against the captured sizes of its startup facts,
with the measured eager penalty and the proposal (console/logs/ladder_plan.py).

A stored line keeps no timestamp nor accept length, so no interval is known to be free of a
prefill: the penalty reads every rate line (`plateau diagnose --log` reads the text and says
more: console/diagnose/log_diagnosis.py).
"""

from __future__ import annotations

from console.diagnose.models import RunEvidence
from console.logs.ladder import Ladder, LadderReader
from console.logs.ladder_plan import plan


def evidence_ladder(ev: RunEvidence) -> Ladder | None:
    """None without a captured list or without Decode lines."""
    facts = ev.startup
    if not facts.capture_bs or facts.decode_graph_disabled:
        return None
    reader = LadderReader()
    reader.set_capture(list(facts.capture_bs), wording=facts.capture_wording,
                       mem_gb=facts.graph_mem_gb, capture_s=facts.graph_capture_s,
                       kv_gb=facts.kv_pool_gb, kv_tokens=facts.kv_pool_tokens,
                       max_running=facts.max_running_requests)
    for step in ev.steps:
        for point in step.decode:
            reader.add_decode(point.running, point.cuda_graph, point.gen_throughput)
    ladder = plan(reader, version=facts.sglang_version)
    return ladder if ladder.decode_lines else None
